"""atoms"""
