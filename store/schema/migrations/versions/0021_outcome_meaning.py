"""an outcome stores what its status says: final, tone and words (issue 31)

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-06 07:00:00

Each outcome row carries its status's meaning as its domain declared it when the row was
written (`workers.domains.meaning`): `final` (nothing more happens by itself; every waiter
stops), `tone` (store.vocabulary.Tone, checked) and `words` (JSON {"en": ..., "zh": ...}).
Readers take them from the row and never guess from a status, so a new domain's still-working
status keeps `?until=final` waiting and a card redrawn later says what it said then.

Rows written before this revision get the words, tones and finality every surface showed for
their status until now (frozen below); a status nobody knew reads as itself, warn, final.
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

from store.vocabulary import allowed_sql

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

# store.vocabulary.Tone as of this revision, frozen here
TONES = ("good", "working", "warn", "bad", "done")
# status -> (en, zh, tone, final): cards/strings.py outcome.*, cards/vocabulary.py
# OUTCOME_TONE and bot/progress.py STILL_MOVING as they were before this revision
BEFORE: dict[str, tuple[str, str, str, bool]] = {
    "accepted": ("Accepted by the venue", "交易所已接受", "good", False),
    "resting": ("Resting on the book", "挂单中", "good", False),
    "partially_filled": ("Partially filled", "部分成交", "good", False),
    "filled": ("Filled", "已成交", "good", True),
    "rejected": ("Rejected by the venue", "交易所已拒绝", "bad", True),
    "cancelled": ("Cancelled at the venue", "交易所已撤单", "done", True),
    "preflight_rejected": (
        "Refused by pre-check — nothing sent",
        "预检未通过 — 未发送",
        "bad",
        True,
    ),
    "reservation_refused": (
        "Over the exposure budget — nothing sent",
        "超出敞口预算 — 未发送",
        "bad",
        True,
    ),
    "unknown": ("Submission unknown — reconciling", "提交结果未知 — 正在核对", "warn", False),
    "sent": ("Sent", "已发送", "good", True),
    "not_submitted": (
        "Not executed — the venue never received it",
        "未执行 — 交易所从未收到",
        "done",
        True,
    ),
    "unresolved": (
        "Unresolved — a person must check it",
        "无法自动核对 — 需要人工确认",
        "bad",
        True,
    ),
}


def _words(en: str, zh: str) -> str:
    # as kernel.canonical.canonical_json writes it
    return json.dumps(
        {"en": en, "zh": zh}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def upgrade() -> None:
    with op.batch_alter_table("outcomes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("final", sa.Boolean(), nullable=True))
        batch_op.add_column(sa.Column("tone", sa.String(length=8), nullable=True))
        batch_op.add_column(sa.Column("words", sa.Text(), nullable=True))
    outcomes = sa.table(
        "outcomes",
        sa.column("status", sa.String()),
        sa.column("final", sa.Boolean()),
        sa.column("tone", sa.String()),
        sa.column("words", sa.Text()),
    )
    for status, (en, zh, tone, final) in BEFORE.items():
        op.execute(
            outcomes.update()
            .where(outcomes.c.status == status)
            .values(final=final, tone=tone, words=_words(en, zh))
        )
    rest = op.get_bind().execute(
        sa.select(outcomes.c.status).where(outcomes.c.words.is_(None)).distinct()
    )
    for (status,) in rest.all():
        op.execute(
            outcomes.update()
            .where(outcomes.c.status == status, outcomes.c.words.is_(None))
            .values(final=True, tone="warn", words=_words(status, status))
        )
    with op.batch_alter_table("outcomes", schema=None) as batch_op:
        batch_op.alter_column("final", existing_type=sa.Boolean(), nullable=False)
        batch_op.alter_column("tone", existing_type=sa.String(length=8), nullable=False)
        batch_op.alter_column("words", existing_type=sa.Text(), nullable=False)
        batch_op.create_check_constraint(op.f("ck_outcomes_tone"), allowed_sql("tone", TONES))


def downgrade() -> None:
    with op.batch_alter_table("outcomes", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_outcomes_tone"), type_="check")
        batch_op.drop_column("words")
        batch_op.drop_column("tone")
        batch_op.drop_column("final")
