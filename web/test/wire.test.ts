// The clients' wire types (clients/shared/wire.ts) are what `make client-types` writes from docs/openapi.json
// today, and the hand-written aliases agree with the document where a type check cannot see it.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { HIGHLIGHT_COLORS } from "../../clients/shared/model.ts";

const root = (path: string): string => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const CLI = fileURLToPath(new URL("../node_modules/openapi-typescript/bin/cli.js", import.meta.url));

test("clients/shared/wire.ts is a fresh generation from docs/openapi.json", () => {
  // The arguments of `make client-types`: optional is what the document leaves out of `required`.
  const args = [CLI, root("docs/openapi.json"), "--default-non-nullable", "false"];
  const fresh = spawnSync(process.execPath, args, { encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(fresh.status, 0, fresh.stderr);
  const committed = readFileSync(root("clients/shared/wire.ts"), "utf8");
  assert.ok(committed === fresh.stdout, "clients/shared/wire.ts differs from docs/openapi.json: run `make client-types`");
});

test("the highlight colors are the schema's Color enum, in its order", () => {
  const document = JSON.parse(readFileSync(root("docs/openapi.json"), "utf8")) as {
    components: { schemas: Record<string, { enum?: string[] }> };
  };
  assert.deepEqual([...HIGHLIGHT_COLORS], document.components.schemas.Color?.enum);
});
