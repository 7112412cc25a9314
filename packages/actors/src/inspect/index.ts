/** `@signalbox/actors/inspect`: live views of runs — the Stately inspector bridge, the local inspector, Mermaid diagrams. */
export { type BusInspector, type BusInspectorOptions, createBusInspector } from './bus.ts'
export {
  type ConverterOptions,
  createInspectionConverter,
  INSPECTOR_EVENT_TYPES,
  type InspectedEventObject,
  type InspectedSnapshot,
  type InspectionConverter,
  type InspectorActorEvent,
  type InspectorEventEvent,
  type InspectorSnapshotEvent,
  type InspectorWireEvent,
  isInspectorWireEvent,
} from './convert.ts'
export {
  createStatelyInspector,
  type Inspector,
  type InspectorOptions,
  type ManualInspector,
  type StatelyInspectorOptions,
} from './inspector.ts'
export { createLocalInspector, type LocalInspector, type LocalInspectorOptions } from './local.ts'
export { type MermaidOptions, statechartToMermaid } from './mermaid.ts'
export {
  type InspectReviewerOptions,
  inspectReviewer,
  inspectTool,
  inspectToolHost,
  type ToolHostCallbacks,
} from './participants.ts'
export { type InspectionRelay, type InspectionRelayOptions, startInspectionRelay } from './relay.ts'
export { type BridgeServer, type BridgeServerOptions, STATELY_INSPECTOR_URL, startBridgeServer } from './server.ts'
