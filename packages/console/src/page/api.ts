/// <reference lib="dom" />
/** The console's actions, posted with the token the page was served with. */

const token = document.querySelector('meta[name="signalbox-token"]')?.getAttribute('content') ?? ''

export async function post(path: string, body: unknown): Promise<void> {
  const response = await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-signalbox-console': token },
    body: JSON.stringify(body),
  })
  if (response.ok) return
  let message = `${response.status} ${response.statusText}`
  try {
    const data = (await response.json()) as { error?: { message?: string } }
    if (data.error?.message) message = data.error.message
  } catch {
    // keep the status line
  }
  throw new Error(message)
}

export const actions = {
  decide: (id: string, approved: boolean, reason?: string) =>
    post(`/api/approvals/${encodeURIComponent(id)}`, { approved, ...(reason ? { reason } : {}) }),
  approveEdited: (id: string, edited: unknown) =>
    post(`/api/approvals/${encodeURIComponent(id)}`, { approved: true, arguments: edited }),
  answer: (id: string, answer: string) => post(`/api/questions/${encodeURIComponent(id)}`, { answer }),
  steer: (runId: string, text: string) => post(`/api/runs/${encodeURIComponent(runId)}/steer`, { text }),
  cancel: (runId: string, reason?: string) => post(`/api/runs/${encodeURIComponent(runId)}/cancel`, reason ? { reason } : {}),
}
