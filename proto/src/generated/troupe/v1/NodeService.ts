// Original file: troupe/v1/jobs.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { DrainNodeRequest as _troupe_v1_DrainNodeRequest, DrainNodeRequest__Output as _troupe_v1_DrainNodeRequest__Output } from '../../troupe/v1/DrainNodeRequest';
import type { DrainNodeResponse as _troupe_v1_DrainNodeResponse, DrainNodeResponse__Output as _troupe_v1_DrainNodeResponse__Output } from '../../troupe/v1/DrainNodeResponse';
import type { ListNodesRequest as _troupe_v1_ListNodesRequest, ListNodesRequest__Output as _troupe_v1_ListNodesRequest__Output } from '../../troupe/v1/ListNodesRequest';
import type { ListNodesResponse as _troupe_v1_ListNodesResponse, ListNodesResponse__Output as _troupe_v1_ListNodesResponse__Output } from '../../troupe/v1/ListNodesResponse';
import type { NodesUpdate as _troupe_v1_NodesUpdate, NodesUpdate__Output as _troupe_v1_NodesUpdate__Output } from '../../troupe/v1/NodesUpdate';
import type { WatchNodesRequest as _troupe_v1_WatchNodesRequest, WatchNodesRequest__Output as _troupe_v1_WatchNodesRequest__Output } from '../../troupe/v1/WatchNodesRequest';

/**
 * Lists and drains node agents. Served by the coordinator.
 */
export interface NodeServiceClient extends grpc.Client {
  /**
   * Stops placing new work on a node; activations already there finish or are
   * re-placed. Idempotent.
   */
  DrainNode(argument: _troupe_v1_DrainNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_DrainNodeResponse__Output>): grpc.ClientUnaryCall;
  DrainNode(argument: _troupe_v1_DrainNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_DrainNodeResponse__Output>): grpc.ClientUnaryCall;
  DrainNode(argument: _troupe_v1_DrainNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_DrainNodeResponse__Output>): grpc.ClientUnaryCall;
  DrainNode(argument: _troupe_v1_DrainNodeRequest, callback: grpc.requestCallback<_troupe_v1_DrainNodeResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Stops placing new work on a node; activations already there finish or are
   * re-placed. Idempotent.
   */
  drainNode(argument: _troupe_v1_DrainNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_DrainNodeResponse__Output>): grpc.ClientUnaryCall;
  drainNode(argument: _troupe_v1_DrainNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_DrainNodeResponse__Output>): grpc.ClientUnaryCall;
  drainNode(argument: _troupe_v1_DrainNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_DrainNodeResponse__Output>): grpc.ClientUnaryCall;
  drainNode(argument: _troupe_v1_DrainNodeRequest, callback: grpc.requestCallback<_troupe_v1_DrainNodeResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Lists the registered node agents, live and dead.
   */
  ListNodes(argument: _troupe_v1_ListNodesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  ListNodes(argument: _troupe_v1_ListNodesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  ListNodes(argument: _troupe_v1_ListNodesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  ListNodes(argument: _troupe_v1_ListNodesRequest, callback: grpc.requestCallback<_troupe_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Lists the registered node agents, live and dead.
   */
  listNodes(argument: _troupe_v1_ListNodesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  listNodes(argument: _troupe_v1_ListNodesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_troupe_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  listNodes(argument: _troupe_v1_ListNodesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_troupe_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  listNodes(argument: _troupe_v1_ListNodesRequest, callback: grpc.requestCallback<_troupe_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Streams the node list: first a snapshot (what ListNodes returns), then an
   * update each time a node registers, changes state (drained, declared dead),
   * leaves, or its slot usage changes. Like ListNodes it is served by the
   * leader only (UNAVAILABLE elsewhere); the stream ends with UNAVAILABLE when
   * this coordinator stops leading, and a client that reconnects gets a fresh
   * snapshot.
   */
  WatchNodes(argument: _troupe_v1_WatchNodesRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_NodesUpdate__Output>;
  WatchNodes(argument: _troupe_v1_WatchNodesRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_NodesUpdate__Output>;
  /**
   * Streams the node list: first a snapshot (what ListNodes returns), then an
   * update each time a node registers, changes state (drained, declared dead),
   * leaves, or its slot usage changes. Like ListNodes it is served by the
   * leader only (UNAVAILABLE elsewhere); the stream ends with UNAVAILABLE when
   * this coordinator stops leading, and a client that reconnects gets a fresh
   * snapshot.
   */
  watchNodes(argument: _troupe_v1_WatchNodesRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_NodesUpdate__Output>;
  watchNodes(argument: _troupe_v1_WatchNodesRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_troupe_v1_NodesUpdate__Output>;
  
}

/**
 * Lists and drains node agents. Served by the coordinator.
 */
export interface NodeServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Stops placing new work on a node; activations already there finish or are
   * re-placed. Idempotent.
   */
  DrainNode: grpc.handleUnaryCall<_troupe_v1_DrainNodeRequest__Output, _troupe_v1_DrainNodeResponse>;
  
  /**
   * Lists the registered node agents, live and dead.
   */
  ListNodes: grpc.handleUnaryCall<_troupe_v1_ListNodesRequest__Output, _troupe_v1_ListNodesResponse>;
  
  /**
   * Streams the node list: first a snapshot (what ListNodes returns), then an
   * update each time a node registers, changes state (drained, declared dead),
   * leaves, or its slot usage changes. Like ListNodes it is served by the
   * leader only (UNAVAILABLE elsewhere); the stream ends with UNAVAILABLE when
   * this coordinator stops leading, and a client that reconnects gets a fresh
   * snapshot.
   */
  WatchNodes: grpc.handleServerStreamingCall<_troupe_v1_WatchNodesRequest__Output, _troupe_v1_NodesUpdate>;
  
}

export interface NodeServiceDefinition extends grpc.ServiceDefinition {
  DrainNode: MethodDefinition<_troupe_v1_DrainNodeRequest, _troupe_v1_DrainNodeResponse, _troupe_v1_DrainNodeRequest__Output, _troupe_v1_DrainNodeResponse__Output>
  ListNodes: MethodDefinition<_troupe_v1_ListNodesRequest, _troupe_v1_ListNodesResponse, _troupe_v1_ListNodesRequest__Output, _troupe_v1_ListNodesResponse__Output>
  WatchNodes: MethodDefinition<_troupe_v1_WatchNodesRequest, _troupe_v1_NodesUpdate, _troupe_v1_WatchNodesRequest__Output, _troupe_v1_NodesUpdate__Output>
}
