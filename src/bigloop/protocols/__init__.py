"""Protocols that expose atoms to other programs, or consume theirs.

`openai_server`: any `ChatModel` behind an OpenAI-compatible chat-completions endpoint
(`bigloop serve openai`). MCP and A2A come later.
"""
