"""Accept an intended change: the chosen cases' eval files rewritten to expect what the
agent now does, on the chosen axes, in place and byte for byte elsewhere (docs/accept.md).

`plan` chooses the cases and axes and what each turn should expect; `apply` writes it into
the eval files through `splice`, which edits one JSON value in the file's own style.
"""
