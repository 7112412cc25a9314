/** signalbox testing kit: a scripted model, over HTTP (OpenAI wire format) or in-process. */
/** Drives approval deadlines, retries and timeouts without sleeping: pass it as an agent's `clock`. */
export { SimulatedClock } from 'xstate'
export { sampleCheckpoint } from './sample-checkpoint.ts'
export {
  type RecordedRequest,
  type RequestExpectation,
  type Responder,
  type Script,
  type ScriptedDelay,
  type ScriptedError,
  ScriptedModelError,
  type ScriptedReply,
  type ScriptedToolCall,
  type ScriptStep,
  type Scripts,
} from './script.ts'
export { type ScriptedModelServer, type ScriptedModelServerOptions, startScriptedModelServer } from './scripted-model-server.ts'
export { ScriptedProvider, type ScriptedProviderOptions } from './scripted-provider.ts'
