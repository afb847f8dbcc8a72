"""Example plugin `example.word-count-py` (label read), in Python: counts the
words of a text, skipping words shorter than the operator's `min_length`
setting. The same job as examples/word-count, built with componentize-py
against the `read-capability` world (see build.sh and
docs/writing-a-capability.md)."""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import invocation, log
from wit_world.imports.capstan_capability_types import (
    Descriptor,
    Failure_InvalidInput,
    Label,
    Outcome,
    OutcomeStatus,
    ReplayPolicy,
)

INPUT_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "Any text."}},
    "required": ["text"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "words": {"type": "integer", "minimum": 0},
        "called_by": {"type": "string"},
    },
    "required": ["words", "called_by"],
}


class Capability(exports.Capability):
    def describe(self) -> Descriptor:
        return Descriptor(
            id="example.word-count-py",
            version=1,
            label=Label.READ,
            summary="Count the words in a text (Python)",
            description="Counts whitespace-separated words, skipping those "
            "shorter than the min_length setting (default 1).",
            tags=["example", "text"],
            aliases=["count words", "字数"],
            input_schema=json.dumps(INPUT_SCHEMA),
            output_schema=json.dumps(OUTPUT_SCHEMA),
            replay=ReplayPolicy.SAFE,
            services=[],
        )

    def invoke(self, input: str) -> Outcome:
        # The host checked `input` against INPUT_SCHEMA before this call.
        text = json.loads(input)["text"]
        setting = invocation.setting("min_length")
        try:
            minimum = int(setting) if setting is not None else 1
        except ValueError:
            # Raising Err(failure) is how a Python capability returns a
            # failure; any other exception traps and the call fails.
            raise Err(Failure_InvalidInput(f"setting min_length={setting} is not a number"))
        words = sum(1 for word in text.split() if len(word) >= minimum)
        log.write(log.Level.DEBUG, f"counted {words} words")
        called_by = invocation.context().actor.name.lower().replace("_", "-")
        output = {"words": words, "called_by": called_by}
        return Outcome(status=OutcomeStatus.SUCCEEDED, output=json.dumps(output))
