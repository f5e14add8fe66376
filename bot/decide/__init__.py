"""How a person's decision is taken, whatever the entry it came through.

- provenance.py: the checks (pure): is this click from someone who may decide, on the
  original card or their signed-in page, for these terms; a web post as a click.
- reject_reason.py: a reject's reason (or a request's note) as it is kept.
- core.py: `Decider`: the one write, its verdict, the answer stored with the refusal, the kicks.
- counters.py: decisions, claims and refusals by entry, for /metrics.
- recovery.py: on start, clicks a previous run left unanswered are answered, never applied.

The entries are thin: the Lark card (bot/ingress/callbacks.py, decision.py) and the web
page (bot/api/web_decide.py) own their transport, their answers' shape and their replays.
"""
