"""The prompts of a `vazao quality` run: a text file (one prompt per non-empty line) or JSONL (one object a
line: {"prompt": "…"} or {"messages": [{"role": …, "content": …}, …]}), read through the input layer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vazao import inputs, limits
from vazao.errors import VazaoError


@dataclass(frozen=True)
class PromptItem:
    text: str | None = None
    messages: tuple[tuple[str, str], ...] | None = None  # (role, content) pairs

    def chat_messages(self) -> list[dict[str, str]]:
        if self.messages is not None:
            return [{"role": r, "content": c} for r, c in self.messages]
        return [{"role": "user", "content": self.text or ""}]

    def completion_text(self) -> str:
        if self.text is not None:
            return self.text
        return "".join(f"{r}: {c}\n" for r, c in self.messages or ()) + "assistant:"


def _from_json(obj: object, n: int) -> PromptItem:
    if isinstance(obj, str):
        obj = {"prompt": obj}
    if not isinstance(obj, dict):
        raise VazaoError(f"prompts line {n}: expected {{\"prompt\": …}} or {{\"messages\": […]}}")
    if "messages" in obj:
        msgs = obj["messages"]
        if not isinstance(msgs, list) or not msgs:
            raise VazaoError(f"prompts line {n}: `messages` must be a non-empty list")
        pairs = []
        for m in msgs:
            if not isinstance(m, dict) or not isinstance(m.get("content"), str) or not isinstance(m.get("role"), str):
                raise VazaoError(f"prompts line {n}: each message needs a text `role` and `content`")
            pairs.append((m["role"], m["content"]))
        if not any(c.strip() for _, c in pairs):
            raise VazaoError(f"prompts line {n}: the messages are empty")
        return PromptItem(messages=tuple(pairs))
    text = obj.get("prompt")
    if not isinstance(text, str) or not text.strip():
        raise VazaoError(f"prompts line {n}: `prompt` must be non-empty text")
    return PromptItem(text=text)


def read_prompts(path: Path | str) -> tuple[PromptItem, ...]:
    """The prompts of `path`: JSONL when its first non-empty line starts with '{' or '"', else one per line."""
    text = inputs.read_text(path, "prompts file")
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise VazaoError(f"prompts file {Path(path).name} holds no prompt")
    if len(lines) > limits.MAX_QUALITY_PROMPTS:
        raise VazaoError(f"prompts file {Path(path).name}: {len(lines):,} prompts, more than the "
                         f"{limits.MAX_QUALITY_PROMPTS:,} one run accepts")
    if lines[0][1].lstrip()[:1] in ("{", '"'):
        return tuple(_from_json(inputs.loads_json(line, f"prompts line {n}"), n) for n, line in lines)
    return tuple(PromptItem(text=line.strip()) for _, line in lines)
