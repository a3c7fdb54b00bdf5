"""Prompts for a bench run: synthetic text sized to a token target, shared prefixes and multi-turn
histories from the workload, or real prompts from a JSONL dataset.

Synthetic text is drawn (seeded per request) from common English words that most tokenizers
encode as one token each with a leading space. How many tokens a word really costs, and what the
chat template adds, comes from calibration, best source first:
1. a user-supplied tokenizer.json: words that are not one token are dropped, so sizes are exact;
2. the server's own usage counts on two probe prompts (prompt tokens = overhead + k × words);
3. the server's tokenize endpoint (/extras/tokenize, /tokenize) on a long sample;
4. otherwise one token per word, and the report says the sizes are assumed.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vazao import inputs, limits
from vazao.errors import VazaoError
from vazao.loadgen.client import Prompt

if TYPE_CHECKING:  # the plan package (pydantic) is not imported for a type
    from vazao.workload.types import RequestSpec

__all__ = ["WORDS", "Dataset", "PromptBuilder", "Sizing", "TextMaker"]

_WORD_TEXT = """
the of and to in is that for it as was with be by on not he this are or his from at which but
have an they you were her she there one all we their has been if more when will would who so no
time about than into only other new some could these two may first then do any like my now over
such our man me even most made after also did many before must through back years where much your
way well down should because each just those people how too little state good very make world
still own see men work long get here between both life being under never day same another know
while last might us great old year off come since against go came right used take three states
himself few house use during without again place around however home small found thought went
say part once general high upon school every does got united left number course war until always
away something fact though water less public put think almost hand enough far took head yet
government system better set told nothing night end why called didn find going look asked later
point knew city next program business give group toward young days let room president side social
present given several order national possible rather second per face among form important often
things looked early white case large become felt need big within children along best ever least
power development light thing seemed family interest want members mind country area others done
turned although open problem sense service help certain already door kind began law land matter
"""
WORDS = tuple(_WORD_TEXT.split())


@dataclass(frozen=True)
class Sizing:
    """prompt tokens ≈ overhead + tokens_per_word × words."""

    tokens_per_word: float = 1.0
    overhead: int = 0
    source: str = "assumed (1 token per word)"

    def words_for(self, tokens: int) -> int:
        return max(1, round(tokens / self.tokens_per_word))

    def tokens_for(self, words: int) -> int:
        return round(words * self.tokens_per_word)

    def to_json(self) -> dict:
        return {"tokens_per_word": self.tokens_per_word, "overhead": self.overhead, "source": self.source}


class TextMaker:
    """Seeded synthetic text; with a tokenizer, only words that encode to one token are used."""

    def __init__(self, seed: int = 0, tokenizer=None):
        self.seed = seed
        self.tokenizer = tokenizer
        words = WORDS
        if tokenizer is not None:
            enc = tokenizer.encode_batch([" " + w for w in WORDS], add_special_tokens=False)
            words = tuple(w for w, e in zip(WORDS, enc, strict=True) if len(e.ids) == 1) or WORDS
        self.words = words

    def text(self, words: int, key: str) -> str:
        rng = random.Random(f"{self.seed}:{key}")
        return " ".join(rng.choices(self.words, k=max(1, words)))

    def count(self, text: str) -> int | None:
        if self.tokenizer is None:
            return None
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)


@dataclass
class Dataset:
    """Real prompts, one JSON object a line: {"prompt": str} or {"messages": [...]}, with an
    optional "output_tokens" (or "max_tokens")."""

    rows: list[dict]
    path: str = ""

    @classmethod
    def load(cls, path: str | Path) -> Dataset:
        rows = []
        for n, line in inputs.iter_lines(path, "dataset file"):
            if line is None:
                raise VazaoError(f"dataset {path}:{n}: not UTF-8 text, or longer than "
                                 f"{limits.MAX_LINE_BYTES // 2**20} MiB")
            if not line.strip():
                continue
            row = inputs.loads_json(line, f"dataset {path}:{n}")
            if not isinstance(row, dict) or not (isinstance(row.get("prompt") or row.get("text"), str)
                                                 or isinstance(row.get("messages"), list)):
                raise VazaoError(f"dataset {path}:{n}: expected {{\"prompt\": \"...\"}} "
                                 "or {\"messages\": [...]}")
            rows.append(row)
        if not rows:
            raise VazaoError(f"dataset {path} has no prompts")
        return cls(rows, str(path))

    def row(self, i: int) -> dict:
        return self.rows[i % len(self.rows)]


@dataclass
class _Conversation:
    messages: list[dict] = field(default_factory=list)
    tokens: int = 0  # prompt + output tokens of the turns so far, as the server counted them


class PromptBuilder:
    """Turns RequestSpecs into Prompts; keeps each conversation's real history (the server's own
    answers), so a follow-up turn resends exactly what a chat client would."""

    def __init__(self, maker: TextMaker, sizing: Sizing, api: str = "chat", dataset: Dataset | None = None):
        self.maker = maker
        self.sizing = sizing
        self.api = api
        self.dataset = dataset
        self._prefixes: dict[tuple[str, int], tuple[str, int]] = {}
        self._conversations: dict[str, _Conversation] = {}

    def _sized(self, tokens: int, key: str) -> tuple[str, int]:
        words = self.sizing.words_for(tokens)
        text = self.maker.text(words, key)
        counted = self.maker.count(text)
        return text, counted if counted is not None else self.sizing.tokens_for(words)

    def _prefix(self, prefix_id: str, tokens: int) -> tuple[str, int]:
        key = (prefix_id, tokens)
        if key not in self._prefixes:
            self._prefixes[key] = self._sized(tokens, f"prefix:{prefix_id}")
        return self._prefixes[key]

    def needs_text(self, spec: RequestSpec) -> bool:
        """Whether a later turn will resend this request's answer."""
        return spec.conversation_id is not None

    def build(self, index: int, spec: RequestSpec) -> Prompt:
        max_tokens = int(spec.output_tokens or 16)
        if self.dataset is not None:
            return self._from_dataset(index, spec, max_tokens)
        prefix_tokens = int(spec.prefix_tokens or 0)
        history_tokens = int(spec.history_tokens or 0)
        total = int(spec.prompt_tokens or 1)
        # A later turn's history already holds the prefix (the first turn's prompt began with it) and the
        # template's overhead: only the new user message is made here. Subtracting the prefix again left
        # every follow-up turn a 1-token message (support's turns 2-8 sent 1 token instead of 300).
        base = history_tokens if history_tokens else prefix_tokens + self.sizing.overhead
        new_tokens = max(1, total - base)
        user, user_n = self._sized(new_tokens, f"req:{spec.request_id}")
        prefix, prefix_n = ("", 0)
        if prefix_tokens and spec.prefix_id is not None:
            prefix, prefix_n = self._prefix(spec.prefix_id, prefix_tokens)
        conv = self._conversations.get(spec.conversation_id) if self.needs_text(spec) else None
        history = list(conv.messages) if conv else []
        if history:
            expected = conv.tokens + user_n  # the previous prompt already holds the prefix
        else:
            expected = self.sizing.overhead + prefix_n + user_n
            if prefix:
                user = prefix + "\n\n" + user
        messages = [*history, {"role": "user", "content": user}]
        if self.api == "chat":
            return Prompt(max_tokens, messages=messages, tokens=expected, tokens_from=self._source())
        text = "".join(f"{m['content']}\n\n" for m in history) + user
        return Prompt(max_tokens, text=text, tokens=expected, tokens_from=self._source())

    def completed(self, spec: RequestSpec, prompt: Prompt, prompt_tokens: int, output_tokens: int,
                  answer: str | None) -> None:
        """Record a finished turn so the conversation's next turn carries it."""
        if not self.needs_text(spec):
            return
        if not answer:  # a failed turn: keep the history the size the workload planned
            answer = self.maker.text(self.sizing.words_for(int(spec.output_tokens or 1)),
                                     f"answer:{spec.request_id}")
        conv = self._conversations.setdefault(spec.conversation_id, _Conversation())
        user = prompt.messages[-1] if prompt.messages else {"role": "user", "content": prompt.text or ""}
        if prompt.messages is None and conv.messages:
            # completions: prompt.text already holds the history; keep only this turn's text
            user = {"role": "user", "content": prompt.text.rsplit("\n\n", 1)[-1]}
        conv.messages.append(user)
        conv.messages.append({"role": "assistant", "content": answer})
        conv.tokens = prompt_tokens + output_tokens

    def _source(self) -> str:
        return "tokenizer" if self.maker.tokenizer is not None else f"estimate: {self.sizing.source}"

    def _from_dataset(self, index: int, spec: RequestSpec, max_tokens: int) -> Prompt:
        row = self.dataset.row(index)
        out = int(row.get("output_tokens") or row.get("max_tokens") or max_tokens)
        if isinstance(row.get("messages"), list):
            messages = row["messages"]
            text = " ".join(str(m.get("content", "")) for m in messages if isinstance(m, Mapping))
        else:
            messages = None
            text = row.get("prompt") or row.get("text")
        counted = self.maker.count(text)
        tokens = counted if counted is not None else self.sizing.overhead + self.sizing.tokens_for(len(text.split()))
        if self.api == "chat":
            messages = messages or [{"role": "user", "content": text}]
            return Prompt(out, messages=messages, tokens=tokens, tokens_from=self._source())
        return Prompt(out, text=text if messages is None else None, messages=messages, tokens=tokens,
                      tokens_from=self._source())


def sizing_from_usage(words: tuple[int, int], prompt_tokens: tuple[int, int], source: str) -> Sizing:
    (w1, w2), (p1, p2) = words, prompt_tokens
    if w2 == w1 or p2 <= p1:
        return Sizing(source="assumed (1 token per word): the server's counts did not grow with the prompt")
    k = (p2 - p1) / (w2 - w1)
    return Sizing(tokens_per_word=k, overhead=max(0, round(p1 - k * w1)), source=source)
