"""Projection -> Lark card JSON 2.0, and the en/zh strings operators read.

Imports only from `store`; never from `bot` or `workers`.
"""
