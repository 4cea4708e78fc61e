/**
 * @packageDocumentation
 * @troupe/testkit: test harness for Troupe. Starts real services (`nats-server` with JetStream,
 * the Docker engine) and provides the one fake the project allows: an OpenAI-compatible HTTP
 * server with scripted replies that fails loudly when its script runs out. Also small helpers
 * for waiting on conditions and events with deadlines, temp directories and test isolation.
 */
export { ensureDocker, dockerAvailable, type EnsureDockerOptions } from './ensure-docker';
export { FakeOpenAI, type FakeOpenAIOptions } from './fake-openai';
export { getFreePort } from './get-free-port';
export { noopLogger, type TestkitLogger } from './logger';
export { MissingBinaryError } from './missing-binary-error';
export type { NatsConnectOptions, NatsServerHandle, NatsServerOptions } from './nats-server-handle';
export { randomClusterName } from './random-cluster-name';
export type {
  ChatRequest,
  FakeCompletion,
  FakeDisconnect,
  FakeFinishReason,
  FakeMalformedResponse,
  FakeOpenAIHandler,
  FakeStatusResponse,
  FakeTokenLogprob,
  FakeToolCall,
  FakeUsage,
  RecordedRequest,
  ScriptedResponse,
  UnexpectedRequest,
} from './scripted-response';
export {
  startNatsCluster,
  type NatsClusterHandle,
  type NatsClusterOptions,
} from './start-nats-cluster';
export { startNatsServer } from './start-nats-server';
export { startSocketProxy, type SocketProxyHandle } from './start-socket-proxy';
export { stopProcess } from './stop-process';
export { timed, type Timed } from './timed';
export { startTcpProxy, type TcpProxyHandle, type TcpProxyOptions } from './start-tcp-proxy';
export { makeTempDir, withTempDir, type TempDir } from './temp-dir';
export { waitFor, type WaitForOptions } from './wait-for';
export { waitForEvent, type WaitForEventOptions } from './wait-for-event';
export { WaitTimeoutError } from './wait-timeout-error';
