// Builds the report page's script (tb-mindspore report) as ONE classic script, tb_plugin_mindspore/static/report.js,
// that the report file inlines (a module script could not import anything from a file opened from disk). Run after
// vite.config.js, which empties the folder.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

export default defineConfig({
  base: "./",
  publicDir: false,
  build: {
    outDir: fileURLToPath(new URL("../tb_plugin_mindspore/static", import.meta.url)),
    emptyOutDir: false,
    target: "es2020",
    minify: "esbuild",
    sourcemap: false,
    cssCodeSplit: false,
    reportCompressedSize: false,
    lib: {
      entry: fileURLToPath(new URL("./src/report.js", import.meta.url)),
      formats: ["iife"],
      name: "MindSporeReport",
      fileName: () => "report.js",
    },
    rollupOptions: {
      output: { inlineDynamicImports: true },
    },
  },
});
