"""atoms/models"""
