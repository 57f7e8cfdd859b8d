// The run selector's styles (a string, so that the module also loads in node for the unit tests).

export const RUN_SELECTOR_CSS = `
.ms-filter-row {
  display: flex;
  gap: 4px;
  align-items: center;
}
.ms-filter-row .ms-input {
  flex: 1 1 auto;
  min-width: 0;
}
.ms-regex-toggle {
  flex: 0 0 auto;
  font: 12px monospace;
  padding: 3px 6px;
  border: 1px solid var(--ms-border, #ccc);
  border-radius: 3px;
  background: transparent;
  color: var(--ms-muted, #666);
  cursor: pointer;
}
.ms-regex-toggle[aria-pressed="true"] {
  color: #f57c00;
  border-color: #f57c00;
}
.ms-group-row {
  display: flex;
  flex-direction: column;
  gap: 4px;
  margin-top: 8px;
}
.ms-group-row .ms-select,
.ms-group-row .ms-input {
  width: 100%;
  box-sizing: border-box;
}
/* A run's name is shown whole (wrapped), never cut where runs differ. */
.ms-run-item .ms-run-name {
  white-space: normal;
  overflow-wrap: anywhere;
}
.ms-run-prefix {
  overflow-wrap: anywhere;
}
.ms-group-note,
.ms-run-prefix,
.ms-run-cap {
  font-size: 11px;
  margin: 4px 0;
}
/* Thousands of runs: rows out of sight are neither laid out nor painted. */
.ms-run-item {
  content-visibility: auto;
  contain-intrinsic-size: auto 26px;
}
.ms-run-group {
  display: flex;
  align-items: center;
  gap: 6px;
  margin-top: 6px;
  padding: 2px;
  font-weight: 500;
  font-size: 12px;
  border-top: 1px solid var(--ms-border, #ddd);
}
.ms-run-group .ms-run-name {
  flex: 1 1 auto;
}
.ms-group-swatch {
  width: 12px;
  height: 12px;
  border-radius: 2px;
}
`;
