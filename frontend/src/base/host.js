// Talks to the TensorBoard page that hosts our iframe, through TensorBoard's plugin message protocol:
// the frame posts "experimental.bootstrap" with a MessagePort; TensorBoard then sends JSON messages
// {type, id, payload, error, isReply} on it. "experimental.DataReloaded" arrives after each reload (the reload
// button and TensorBoard's own reload timer). Every message is answered so the host's promise settles.

const DATA_RELOADED = "experimental.DataReloaded";

/** Calls onReload() whenever TensorBoard reloads its data. Returns true if a host page was found. */
export function connectToHost(onReload) {
  if (typeof window === "undefined" || !window.parent || window.parent === window) return false;
  if (typeof MessageChannel === "undefined") return false;
  const channel = new MessageChannel();
  const port = channel.port1;
  port.addEventListener("message", (event) => {
    let msg;
    try {
      msg = JSON.parse(event.data);
    } catch (e) {
      return;
    }
    if (!msg || msg.isReply) return;
    if (msg.type === DATA_RELOADED) {
      try {
        onReload();
      } catch (e) {
        /* a failed refresh must not break the channel */
      }
    }
    port.postMessage(JSON.stringify({ type: msg.type, id: msg.id, payload: null, error: null, isReply: true }));
  });
  port.start();
  try {
    // TensorBoard serves the host page and this frame from one origin; a sandboxed frame has the origin "null".
    const origin = window.location.origin && window.location.origin !== "null" ? window.location.origin : "*";
    window.parent.postMessage("experimental.bootstrap", origin, [channel.port2]);
  } catch (e) {
    return false;
  }
  return true;
}
