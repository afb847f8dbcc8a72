// Example plugin `example.word-count-js` (label read), in JavaScript: counts
// the words of a text, skipping words shorter than the operator's
// `min_length` setting. The same job as examples/word-count, built with
// componentize-js against the `read-capability` world (see build.sh and
// docs/writing-a-capability.md).

import { write } from "capstan:host/log@0.1.0";
import { context, setting } from "capstan:host/invocation@0.1.0";

const INPUT_SCHEMA = {
  type: "object",
  properties: { text: { type: "string", description: "Any text." } },
  required: ["text"],
  additionalProperties: false,
};

const OUTPUT_SCHEMA = {
  type: "object",
  properties: {
    words: { type: "integer", minimum: 0 },
    called_by: { type: "string" },
  },
  required: ["words", "called_by"],
};

export const capability = {
  describe() {
    return {
      id: "example.word-count-js",
      version: 1,
      label: "read",
      summary: "Count the words in a text (JavaScript)",
      description:
        "Counts whitespace-separated words, skipping those shorter than the min_length setting (default 1).",
      tags: ["example", "text"],
      aliases: ["count words", "字数"],
      inputSchema: JSON.stringify(INPUT_SCHEMA),
      outputSchema: JSON.stringify(OUTPUT_SCHEMA),
      replay: "safe",
      services: [],
    };
  },

  invoke(input) {
    // The host checked `input` against INPUT_SCHEMA before this call.
    const { text } = JSON.parse(input);
    const value = setting("min_length");
    const minimum = value === undefined ? 1 : Number(value);
    if (!Number.isInteger(minimum)) {
      // Throwing {tag, val} is how a JavaScript capability returns a
      // failure; anything else thrown traps and the call fails.
      throw { tag: "invalid-input", val: `setting min_length=${value} is not a number` };
    }
    const words = text.split(/\s+/).filter((w) => w.length > 0 && [...w].length >= minimum).length;
    write("debug", `counted ${words} words`);
    const output = { words, called_by: context().actor };
    return { status: "succeeded", output: JSON.stringify(output) };
  },
};
