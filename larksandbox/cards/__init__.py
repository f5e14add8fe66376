"""What Lark checks in a card's content, split out of `larksandbox/cardcheck.py`.

`problem` is the refusal (code 230099 and Lark's `ext=ErrCode: ...` text), `schema` the
JSON 2.0 structure: known tags, known properties per tag, `element_id` rules, the element
limit, button texts, and the 1.0-only modules a 2.0 card may not carry. The sources are cited
in docs/lark-reference.md §6.1.
"""
