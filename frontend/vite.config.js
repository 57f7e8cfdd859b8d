// Builds the tab as ONE ES module (tb_plugin_mindspore/static/index.js) that exports render().
// TensorBoard loads it inside the plugin iframe with `import("./index.js").then((m) => m.render())`.
// CSS is imported with `?inline` and injected from JS, so there is no second file to serve.
import { fileURLToPath } from "node:url";
import { defineConfig, transformWithEsbuild } from "vite";

// Library builds in the "es" format keep whitespace; the tab is one file loaded on every visit, so minify it fully.
function minifyBundle() {
  return {
    name: "tb-mindspore-minify-bundle",
    apply: "build",
    enforce: "post",
    async generateBundle(options, bundle) {
      for (const chunk of Object.values(bundle)) {
        if (chunk.type !== "chunk") continue;
        const out = await transformWithEsbuild(chunk.code, chunk.fileName, {
          minify: true,
          format: "esm",
          target: "es2020",
        });
        chunk.code = out.code;
      }
    },
  };
}

export default defineConfig({
  // Relative base: nothing in the bundle may point at an absolute path (TensorBoard may run under --path_prefix).
  base: "./",
  publicDir: false,
  plugins: [minifyBundle()],
  build: {
    outDir: fileURLToPath(new URL("../tb_plugin_mindspore/static", import.meta.url)),
    emptyOutDir: true,
    target: "es2020",
    minify: "esbuild",
    sourcemap: false,
    cssCodeSplit: false,
    reportCompressedSize: false,
    lib: {
      entry: fileURLToPath(new URL("./src/index.js", import.meta.url)),
      formats: ["es"],
      fileName: () => "index.js",
    },
    rollupOptions: {
      output: { inlineDynamicImports: true },
    },
  },
});
