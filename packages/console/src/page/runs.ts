/// <reference lib="dom" />
/** Runs: the tree of runs (children under their parent), and the selected run's chart and events. */
import type { ChartLayout } from '../chart-graph.ts'
import type { RunView } from '../view-model.ts'
import { actions } from './api.ts'
import { activeStates, createChartView } from './chart.ts'
import { byId, clockTime, el, shortId } from './dom.ts'
import { stateInWords } from './state-words.ts'

export interface RunsView {
  render(runs: Map<string, RunView>): void
}

export interface RunsViewOptions {
  /** The tool of the run's call waiting for approval here, if one is. */
  pendingTool(runId: string): string | undefined
}

export function createRunsView(layout: ChartLayout, options: RunsViewOptions): RunsView {
  const tree = byId('run-tree')
  const detail = byId('run-detail')
  const chart = createChartView(layout)
  const descriptions = new Map(layout.nodes.map((node) => [node.id, node.description]))
  let selected: string | undefined
  let shownRun: string | undefined
  let latest = new Map<string, RunView>()

  const events = el('ol', { class: 'events-list', reversed: '' })
  const title = el('h3', { class: 'run-title' })
  const stateLine = el('p', { class: 'state-line' })
  const steerText = el('input', {
    type: 'text',
    class: 'steer-text',
    placeholder: 'a correction the agent reads at its next tool call',
  })
  const steer = el('button', { type: 'button', class: 'steer' }, 'Steer')
  const cancel = el('button', { type: 'button', class: 'cancel', title: 'Cancel the whole run' }, 'Cancel run')
  const error = el('span', { class: 'error' })
  const report = (failure: unknown) => {
    error.textContent = failure instanceof Error ? failure.message : String(failure)
  }
  steer.addEventListener('click', () => {
    const text = steerText.value.trim()
    if (!selected || !text) return
    error.textContent = ''
    actions.steer(selected, text).then(() => {
      steerText.value = ''
    }, report)
  })
  cancel.addEventListener('click', () => {
    if (!selected) return
    error.textContent = ''
    actions.cancel(selected).catch(report)
  })
  const panel = el(
    'div',
    {},
    title,
    stateLine,
    el(
      'div',
      { class: 'run-controls run-actions' },
      el('span', { class: 'label' }, 'This run:'),
      steerText,
      steer,
      cancel,
      error,
    ),
    el(
      'div',
      { class: 'run-detail-body' },
      el(
        'div',
        { class: 'chart' },
        chart.element,
        el(
          'p',
          { class: 'chart-legend' },
          'Yellow: hook points · dashed: waits · red: a person · the run’s state in blue · dashed orange: exits from any state of the run.',
        ),
      ),
      el('div', { class: 'events' }, el('h4', {}, 'Recent events'), events),
    ),
  )

  const renderTree = () => {
    const children = new Map<string, RunView[]>()
    const roots: RunView[] = []
    for (const run of latest.values()) {
      if (run.parentRunId && latest.has(run.parentRunId)) {
        children.set(run.parentRunId, [...(children.get(run.parentRunId) ?? []), run])
      } else roots.push(run)
    }
    const item = (run: RunView, depth: number): HTMLElement => {
      const link = el(
        'a',
        { 'data-run': run.runId, class: run.runId === selected ? 'selected' : '', title: run.runId },
        `${run.agentId} · ${shortId(run.runId)}`,
      )
      link.addEventListener('click', () => {
        selected = run.runId
        renderAll()
      })
      const kids = depth < 32 ? (children.get(run.runId) ?? []) : []
      return el(
        'li',
        {},
        link,
        ' ',
        el('span', { class: `status-${run.status}` }, run.status),
        kids.length > 0 ? el('ul', {}, ...kids.map((kid) => item(kid, depth + 1))) : null,
      )
    }
    tree.replaceChildren(...roots.sort((a, b) => b.startedAt - a.startedAt).map((run) => item(run, 0)))
  }

  const renderDetail = () => {
    const run = selected ? latest.get(selected) : undefined
    if (!run) {
      detail.replaceChildren(el('p', { class: 'empty' }, 'No runs yet.'))
      shownRun = undefined
      return
    }
    if (shownRun === undefined) detail.replaceChildren(panel)
    shownRun = run.runId
    const agents = [...run.agentPath, run.agentId].join(' › ')
    title.textContent = `${agents} · run ${run.runId}`
    title.dataset.run = run.runId
    const path = activeStates(run.state).at(-1)
    stateLine.replaceChildren(
      'status ',
      el('b', { class: `run-status status-${run.status}` }, run.status),
      ' · ',
      ...(path === undefined
        ? [
            el(
              'span',
              { class: 'state-words' },
              run.state === undefined
                ? 'state not published (start the agent with inspection on the bus)'
                : 'in a state the chart does not know',
            ),
          ]
        : [
            el(
              'span',
              { class: 'state-words' },
              stateInWords(path.split('.').at(-1) ?? path, descriptions.get(path), toolOf(run)),
            ),
            ' ',
            el('code', { class: 'run-state', title: 'the machine’s state' }, path),
          ]),
    )
    chart.show(run.state)
    events.replaceChildren(
      ...[...run.events]
        .reverse()
        .map((event) =>
          el(
            'li',
            {},
            `${clockTime(event.at)} `,
            el('code', {}, event.type),
            event.summary ? ` ${event.summary}` : '',
            event.detail ? el('span', { class: 'detail' }, event.detail) : null,
          ),
        ),
    )
  }

  /** The tool of the call the run is on: the one waiting for approval here, else the last one started. */
  const toolOf = (run: RunView) =>
    options.pendingTool(run.runId) ?? [...run.events].reverse().find((event) => event.type === 'tool.start')?.toolName

  const renderAll = () => {
    renderTree()
    renderDetail()
  }

  return {
    render(runs) {
      latest = runs
      if (selected === undefined || !runs.has(selected)) {
        // Follow the newest run until a person picks one.
        selected = [...runs.values()].sort((a, b) => b.startedAt - a.startedAt)[0]?.runId
      }
      renderAll()
    },
  }
}
