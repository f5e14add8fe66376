"""The kernel: the few plain helpers every package shares and none of them owns.

Time in UTC and the injectable clock (`kernel.timeutil`), which operation the current task
works on for logs (`kernel.logcontext`), and a field-level problem with its fix
(`kernel.problems`). No storage, no I/O: it sits below `store`, `cards`, `workers` and `bot`,
all of which import it directly (`from kernel.timeutil import utc_now`), and it imports nothing
of ours (tests/test_layout.py holds that).
"""
