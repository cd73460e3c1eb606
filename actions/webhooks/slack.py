"""Slack messages in Block Kit, every text within Slack's limits, truncated with an ellipsis.

Limits (Slack's Block Kit reference): a header's plain text 150 characters, a section's text
3000, a section field 2000 and 10 fields, a button URL 3000, 50 blocks a message. The top-level
`text` is the notification's fallback; it is kept under 3000 (Slack advises 4000). Text from
incidents (log lines, summaries) is escaped (`&`, `<`, `>`) so a log line cannot mention
`<!channel>` or forge a link.
"""

from __future__ import annotations

import json
import re
from typing import Any

from actions.webhooks.events import WebhookEvent, console_link
from diagnosis.incidents import Incident

HEADER_MAX = 150
SECTION_MAX = 3000
FIELD_MAX = 2000
FIELDS_MAX = 10
BLOCKS_MAX = 50
TEXT_MAX = 3000
URL_MAX = 3000
ELLIPSIS = "…"
_PARTIAL_ENTITY = re.compile(r"&[a-z]{0,3}$")


def truncate(text: str, limit: int) -> str:
    """Return `text` if it fits in `limit` characters, else its start and an ellipsis."""
    return text if len(text) <= limit else text[: limit - len(ELLIPSIS)] + ELLIPSIS


def escape(text: str, limit: int) -> str:
    """Escape text for mrkdwn and truncate it, never cutting an escape in half."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if len(escaped) <= limit:
        return escaped
    head = _PARTIAL_ENTITY.sub("", escaped[: limit - len(ELLIPSIS)])
    return head + ELLIPSIS


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)


def _fields(event: WebhookEvent, incident: Incident | None) -> list[dict[str, str]]:
    items: list[tuple[str, Any]] = [("severity", event.severity)]
    if incident is not None:
        top = incident.suspects[0] if incident.suspects else None
        items += [("status", incident.status.value), ("category", incident.category.value)]
        if top is not None and top.node:
            items.append(("node", top.node + (f" GPU {top.gpu}" if top.gpu is not None else "")))
    shown = {k for k, _v in items}
    items += [(k, v) for k, v in event.data.items() if k not in shown]
    if len(items) > FIELDS_MAX:
        rest = len(items) - (FIELDS_MAX - 1)
        items = [*items[: FIELDS_MAX - 1], ("more", f"{rest} more field(s) in the console")]
    return [{"type": "mrkdwn", "text": escape(f"*{k}*\n{_value(v)}", FIELD_MAX)} for k, v in items]


def slack_message(
    event: WebhookEvent, incident: Incident | None = None, console_url: str | None = None
) -> dict[str, Any]:
    """Return a Slack message (blocks and fallback text) for one event."""
    title = f"[TrainGuard] {event.type.value}: {event.incident_id}"
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": truncate(title, HEADER_MAX)}},
        {"type": "section", "text": {"type": "mrkdwn", "text": escape(event.summary, SECTION_MAX)}},
        {"type": "section", "fields": _fields(event, incident)},
    ]
    if incident is not None and incident.evidence:
        evidence = "\n".join(incident.evidence[:10])
        code = escape(evidence, SECTION_MAX - 6)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"```{code}```"}})
    link = console_link(console_url, event.incident_id)
    if link is not None and len(link) <= URL_MAX:
        button = {"type": "button", "text": {"type": "plain_text", "text": "Open in console"}}
        blocks.append({"type": "actions", "elements": [{**button, "url": link}]})
    return {
        "text": escape(f"{title}: {event.summary}", TEXT_MAX),
        "blocks": blocks[:BLOCKS_MAX],
    }
