/**
 * The hotel agent's host module, for `signalbox host examples/travel/hotel-host.ts [--scripted]`.
 * Its approvals go out on the bus (`approvals.hotel`) to whichever reviewer serves them.
 */
import { busAuditLog, remoteReviewer } from '@signalbox/actors'
import type { Bus, Subjects } from '@signalbox/core/bus'
import { openDemoModel } from '../shared/model.ts'
import { createHotelAgent } from './hotel.ts'
import { HOTEL_MODEL, hotelScript } from './script.ts'

/** What `signalbox host` hands a module's factory (the part this module uses). */
interface Host {
  bus: Bus
  subjects: Subjects
  onClose(cleanup: () => unknown): void
}

export default async function hotelHost(host: Host) {
  // Offline by default (`--scripted` or no SIGNALBOX_MODEL): the scripted model server, over HTTP.
  const model = await openDemoModel({ scripts: { [HOTEL_MODEL]: hotelScript } })
  host.onClose(() => model.close())
  const audit = busAuditLog({ bus: host.bus, subjects: host.subjects })
  const reviewer = remoteReviewer({ bus: host.bus, subjects: host.subjects, audit })
  host.onClose(() => reviewer.close())
  return [createHotelAgent({ provider: model.provider(HOTEL_MODEL), reviewer, audit })]
}
