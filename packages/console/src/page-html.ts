/** The console's one HTML page: layout and styles; `app.js` fills it from the SSE stream. */

export function pageHtml(options: { token: string; reviewer: string }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="signalbox-token" content="${escapeAttribute(options.token)}">
<title>signalbox console</title>
<style>${STYLES}</style>
</head>
<body>
<header>
  <strong>signalbox console</strong>
  <nav><a href="#inbox" data-tab="inbox">Inbox <span id="inbox-count">0</span></a><a href="#runs" data-tab="runs">Runs</a><a href="#audit" data-tab="audit">Audit</a></nav>
  <span class="who">reviewing as <b id="reviewer">${escapeHtml(options.reviewer)}</b></span>
  <span id="connection" class="offline">connecting…</span>
</header>
<main>
  <section id="tab-inbox" class="tab">
    <p id="trust-notice" class="notice" role="note" hidden></p>
    <div id="inbox"><p class="empty">Nothing waits for you.</p></div>
    <h3>Recently settled</h3>
    <ul id="settled"></ul>
  </section>
  <section id="tab-runs" class="tab" hidden>
    <div class="runs-layout">
      <aside><h3>Runs</h3><ul id="run-tree"></ul></aside>
      <div id="run-detail"><p class="empty">No runs yet.</p></div>
    </div>
  </section>
  <section id="tab-audit" class="tab" hidden>
    <form id="audit-filters">
      <label>agent <input name="agentId"></label>
      <label>run <input name="runId"></label>
      <label>tool <input name="toolName"></label>
      <label>actor <input name="actor"></label>
      <label>kind <select name="kind"><option value="">any</option></select></label>
    </form>
    <table id="audit"><thead><tr><th>decided</th><th>kind</th><th>agent</th><th>run</th><th>tool</th><th>actor</th><th>decision</th><th>reason</th><th>latency</th><th>shown</th><th>edited</th></tr></thead><tbody></tbody></table>
  </section>
</main>
<script type="module" src="/app.js"></script>
</body>
</html>
`
}

const STYLES = `
:root { font: 14px/1.4 system-ui, sans-serif; color: #1a202c; background: #f7fafc; }
* { box-sizing: border-box; }
body { margin: 0; }
header { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1rem; background: #1a202c; color: #fff; }
header nav a { color: #cbd5e0; margin-right: 1rem; text-decoration: none; }
header nav a.active { color: #fff; font-weight: 600; }
#inbox-count { background: #c53030; border-radius: 8px; padding: 0 6px; color: #fff; font-size: 12px; }
.who { margin-left: auto; }
#connection.online { color: #68d391; } #connection.offline { color: #fc8181; }
main { padding: 1rem; max-width: 100%; }
.empty { color: #718096; }
code, pre { overflow-wrap: anywhere; }
.notice { background: #fffbeb; border: 1px solid #f6e05e; color: #744210; border-radius: 6px; padding: .5rem .8rem; margin: 0 0 .8rem; }
.item { background: #fff; border: 1px solid #e2e8f0; border-left: 4px solid #d69e2e; border-radius: 6px; padding: .8rem 1rem; margin-bottom: .8rem; max-width: 72rem; }
.item.question { border-left-color: #3182ce; }
.item-head { display: flex; gap: 1rem; align-items: baseline; flex-wrap: wrap; }
.item h4 { margin: 0 0 .3rem; font-size: 16px; }
.item h4 code { font-size: 15px; }
.item-head .asker { color: #718096; }
.item-head .countdown { margin-left: auto; color: #4a5568; }
.countdown.urgent { color: #c53030; font-weight: 600; }
.origin.verified { color: #276749; font-size: 13px; margin: 0 0 .3rem; }
.tool-description { color: #4a5568; margin: 0 0 .6rem; font-style: italic; }
.why { display: grid; grid-template-columns: 11rem minmax(0, 1fr); gap: .35rem .8rem; margin: 0 0 .6rem; }
.why > span { color: #718096; }
.why blockquote { margin: 0; padding: .15rem .6rem; border-left: 3px solid #cbd5e0; white-space: pre-wrap; overflow-wrap: anywhere; }
.why pre { margin: 0; background: #f7fafc; padding: .4rem .6rem; border-radius: 4px; white-space: pre-wrap; }
.conversation { grid-column: 1 / -1; }
.conversation ol { list-style: none; padding: 0; margin: .4rem 0 0; max-height: 24rem; overflow: auto; }
.conversation li { margin: 0 0 .35rem; padding: .3rem .5rem; border-radius: 4px; background: #f7fafc; white-space: pre-wrap; overflow-wrap: anywhere; font-size: 13px; }
.conversation li .role { font-weight: 600; color: #553c9a; margin-right: .4rem; }
.item dl.meta { display: grid; grid-template-columns: 7rem minmax(0, 1fr); gap: .1rem .6rem; margin: .6rem 0 0; font-size: 12px; color: #4a5568; }
.item dl.meta dt { color: #718096; } .item dl.meta dd { margin: 0; overflow-wrap: anywhere; }
.item.question dl.meta { margin: 0 0 .6rem; }
.actions { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; }
.actions input[type=text] { flex: 1; min-width: 10rem; padding: .3rem; }
button { padding: .3rem .8rem; border-radius: 4px; border: 1px solid #a0aec0; background: #fff; cursor: pointer; }
button.approve { background: #2f855a; color: #fff; border-color: #2f855a; }
button.deny { background: #c53030; color: #fff; border-color: #c53030; }
/* Cancel ends the whole run: its own row, away from the decision, not styled as one. */
.run-controls { display: flex; flex-wrap: wrap; gap: .4rem; align-items: center; margin-top: .8rem; padding-top: .6rem; border-top: 1px dashed #e2e8f0; }
.run-controls .label { color: #718096; font-size: 13px; }
.run-controls input[type=text] { flex: 1; min-width: 10rem; padding: .3rem; }
.run-controls button.cancel { margin-left: 2.5rem; color: #4a5568; border-color: #cbd5e0; background: #edf2f7; }
.error { color: #c53030; }
.edit { margin: .5rem 0 0; } .edit textarea { width: 100%; font: 13px ui-monospace, monospace; }
.edit textarea[aria-invalid="true"] { outline: 2px solid #c53030; }
.edit-issues { color: #c53030; margin: .2rem 0; padding-left: 1.2rem; } .edit-issues:empty { display: none; }
.edit-note { color: #666; font-size: 12px; margin: .2rem 0; }
#settled li { margin: .2rem 0; }
.outcome-approved, .outcome-answered { color: #2f855a; } .outcome-denied, .outcome-timed-out { color: #c53030; }
.runs-layout { display: grid; grid-template-columns: 14rem minmax(0, 1fr); gap: 1rem; }
#run-tree, #run-tree ul { list-style: none; padding-left: .6rem; margin: 0; }
#run-tree li { margin: .15rem 0; overflow-wrap: anywhere; }
#run-tree a { cursor: pointer; color: #2b6cb0; } #run-tree a.selected { font-weight: 700; }
.status-done { color: #2f855a; } .status-failed, .status-cancelled { color: #c53030; }
.run-title { margin: 0 0 .3rem; overflow-wrap: anywhere; }
.state-line { margin: 0 0 .5rem; }
.state-words { font-weight: 600; }
.run-state { color: #718096; font-size: 12px; }
.run-detail-body { display: grid; grid-template-columns: minmax(0, 1fr) 17rem; gap: 1rem; align-items: start; }
.chart { background: #fff; border: 1px solid #e2e8f0; border-radius: 6px; padding: 4px; min-width: 0; }
.chart svg { display: block; width: 100%; height: auto; margin: 0 auto; }
.chart svg text { font: 11px system-ui, sans-serif; }
.chart .node rect { fill: #fff; stroke: #718096; }
.chart .node.compound > rect { fill: #f7fafc; stroke: #a0aec0; }
.chart .node.compound > text { font-weight: 600; fill: #4a5568; }
.chart .node.hook > rect { fill: #fff3c4; stroke: #b7791f; }
.chart .node.human > rect { fill: #fde2e2; stroke: #c53030; }
.chart .node.tool > rect { fill: #e6fffa; stroke: #2c7a7b; }
.chart .node.model > rect { fill: #ebf4ff; stroke: #434190; }
.chart .node.wait > rect { stroke-dasharray: 4 2; }
.chart .node.active > rect { stroke: #2b6cb0; stroke-width: 3; stroke-dasharray: none; }
.chart .node.active.leaf > rect { fill: #2b6cb0; }
.chart .node.active.leaf > text { fill: #fff; font-weight: 700; }
.chart .edge path { fill: none; stroke: #a0aec0; marker-end: url(#arrow); }
.chart .edge.exit path { stroke: #c05621; stroke-dasharray: 5 3; }
.chart .edge .label-bg { fill: #fff; fill-opacity: .85; }
.chart .edge text.label { font-size: 10px; fill: #4a5568; }
.chart .edge.exit text.label { fill: #9c4221; }
.chart-legend { font-size: 12px; color: #718096; margin: .3rem .2rem 0; }
.events { font-size: 13px; min-width: 0; }
.events h4 { margin: 0 0 .3rem; }
.events ol { margin: 0; padding-left: 1.6rem; }
.events li { margin: .15rem 0; overflow-wrap: anywhere; } .events code { color: #553c9a; }
.events .detail { color: #4a5568; display: block; white-space: pre-wrap; overflow-wrap: anywhere; }
#audit-filters { display: flex; gap: .8rem; flex-wrap: wrap; margin-bottom: .6rem; }
table { border-collapse: collapse; width: 100%; background: #fff; font-size: 13px; table-layout: auto; }
th, td { border: 1px solid #e2e8f0; padding: .25rem .4rem; text-align: left; vertical-align: top; overflow-wrap: break-word; }
th { white-space: nowrap; }
#audit td.when, #audit td.kind, #audit td.latency { white-space: nowrap; }
#audit td.run { word-break: break-all; min-width: 9rem; }
td pre { margin: 0; white-space: pre-wrap; max-width: 22rem; font-size: 12px; }
#audit tr.outcome-ok { background: #f0fff4; } #audit tr.outcome-ok td.decision { color: #276749; font-weight: 600; }
#audit tr.outcome-no { background: #fff5f5; } #audit tr.outcome-no td.decision { color: #c53030; font-weight: 600; }
#audit tr.outcome-none { background: #fffaf0; } #audit tr.outcome-none td.decision { color: #975a16; font-weight: 600; }
#audit tr.outcome-refused { background: #faf5ff; } #audit tr.outcome-refused td.decision { color: #6b46c1; font-weight: 600; }
#audit tr.outcome-info td.decision { color: #2c5282; }
#audit .claimed { color: #6b46c1; font-size: 12px; }
#audit .verified-actor { font-weight: 600; }
`

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

function escapeAttribute(text: string): string {
  return escapeHtml(text).replace(/"/g, '&quot;')
}
