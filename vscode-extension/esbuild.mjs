// Bundles the extension (src/extension.ts → dist/extension.js), or with
// --tests each test/unit/*.test.ts → out/test/*.test.js, for node --test.
// vscode-jsonrpc is bundled in; vscode is the host's.

import * as esbuild from "esbuild";
import { readdirSync, rmSync } from "node:fs";

const tests = process.argv.includes("--tests");
const watch = process.argv.includes("--watch");

const common = {
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  sourcemap: true,
  logLevel: "warning",
};

const options = tests
  ? {
      ...common,
      entryPoints: readdirSync("test/unit")
        .filter((f) => f.endsWith(".test.ts"))
        .map((f) => `test/unit/${f}`),
      outdir: "out/test",
      // The tests never load vscode; fail the build if one does.
      external: [],
    }
  : {
      ...common,
      entryPoints: ["src/extension.ts"],
      outfile: "dist/extension.js",
      external: ["vscode"],
      minify: !watch,
    };

rmSync(tests ? "out/test" : "dist", { recursive: true, force: true });
if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await esbuild.build(options);
}
