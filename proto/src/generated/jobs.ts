import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { ArtifactChunk as _troupe_v1_ArtifactChunk, ArtifactChunk__Output as _troupe_v1_ArtifactChunk__Output } from './troupe/v1/ArtifactChunk';
import type { BudgetLimits as _troupe_v1_BudgetLimits, BudgetLimits__Output as _troupe_v1_BudgetLimits__Output } from './troupe/v1/BudgetLimits';
import type { BudgetReservation as _troupe_v1_BudgetReservation, BudgetReservation__Output as _troupe_v1_BudgetReservation__Output } from './troupe/v1/BudgetReservation';
import type { BudgetReservationRef as _troupe_v1_BudgetReservationRef, BudgetReservationRef__Output as _troupe_v1_BudgetReservationRef__Output } from './troupe/v1/BudgetReservationRef';
import type { BudgetScope as _troupe_v1_BudgetScope, BudgetScope__Output as _troupe_v1_BudgetScope__Output } from './troupe/v1/BudgetScope';
import type { BudgetScopeRef as _troupe_v1_BudgetScopeRef, BudgetScopeRef__Output as _troupe_v1_BudgetScopeRef__Output } from './troupe/v1/BudgetScopeRef';
import type { BudgetTotals as _troupe_v1_BudgetTotals, BudgetTotals__Output as _troupe_v1_BudgetTotals__Output } from './troupe/v1/BudgetTotals';
import type { BudgetUpdate as _troupe_v1_BudgetUpdate, BudgetUpdate__Output as _troupe_v1_BudgetUpdate__Output } from './troupe/v1/BudgetUpdate';
import type { CancelJobRequest as _troupe_v1_CancelJobRequest, CancelJobRequest__Output as _troupe_v1_CancelJobRequest__Output } from './troupe/v1/CancelJobRequest';
import type { CancelJobResponse as _troupe_v1_CancelJobResponse, CancelJobResponse__Output as _troupe_v1_CancelJobResponse__Output } from './troupe/v1/CancelJobResponse';
import type { DeleteJobRequest as _troupe_v1_DeleteJobRequest, DeleteJobRequest__Output as _troupe_v1_DeleteJobRequest__Output } from './troupe/v1/DeleteJobRequest';
import type { DeleteJobResponse as _troupe_v1_DeleteJobResponse, DeleteJobResponse__Output as _troupe_v1_DeleteJobResponse__Output } from './troupe/v1/DeleteJobResponse';
import type { DrainNodeRequest as _troupe_v1_DrainNodeRequest, DrainNodeRequest__Output as _troupe_v1_DrainNodeRequest__Output } from './troupe/v1/DrainNodeRequest';
import type { DrainNodeResponse as _troupe_v1_DrainNodeResponse, DrainNodeResponse__Output as _troupe_v1_DrainNodeResponse__Output } from './troupe/v1/DrainNodeResponse';
import type { GetArtifactRequest as _troupe_v1_GetArtifactRequest, GetArtifactRequest__Output as _troupe_v1_GetArtifactRequest__Output } from './troupe/v1/GetArtifactRequest';
import type { GetBudgetRequest as _troupe_v1_GetBudgetRequest, GetBudgetRequest__Output as _troupe_v1_GetBudgetRequest__Output } from './troupe/v1/GetBudgetRequest';
import type { GetBudgetResponse as _troupe_v1_GetBudgetResponse, GetBudgetResponse__Output as _troupe_v1_GetBudgetResponse__Output } from './troupe/v1/GetBudgetResponse';
import type { GetJobRequest as _troupe_v1_GetJobRequest, GetJobRequest__Output as _troupe_v1_GetJobRequest__Output } from './troupe/v1/GetJobRequest';
import type { GetResultsRequest as _troupe_v1_GetResultsRequest, GetResultsRequest__Output as _troupe_v1_GetResultsRequest__Output } from './troupe/v1/GetResultsRequest';
import type { GetRolloutsRequest as _troupe_v1_GetRolloutsRequest, GetRolloutsRequest__Output as _troupe_v1_GetRolloutsRequest__Output } from './troupe/v1/GetRolloutsRequest';
import type { Job as _troupe_v1_Job, Job__Output as _troupe_v1_Job__Output } from './troupe/v1/Job';
import type { JobAggregate as _troupe_v1_JobAggregate, JobAggregate__Output as _troupe_v1_JobAggregate__Output } from './troupe/v1/JobAggregate';
import type { JobEvent as _troupe_v1_JobEvent, JobEvent__Output as _troupe_v1_JobEvent__Output } from './troupe/v1/JobEvent';
import type { JobProgress as _troupe_v1_JobProgress, JobProgress__Output as _troupe_v1_JobProgress__Output } from './troupe/v1/JobProgress';
import type { JobResults as _troupe_v1_JobResults, JobResults__Output as _troupe_v1_JobResults__Output } from './troupe/v1/JobResults';
import type { JobServiceClient as _troupe_v1_JobServiceClient, JobServiceDefinition as _troupe_v1_JobServiceDefinition } from './troupe/v1/JobService';
import type { JobsUpdate as _troupe_v1_JobsUpdate, JobsUpdate__Output as _troupe_v1_JobsUpdate__Output } from './troupe/v1/JobsUpdate';
import type { ListJobsRequest as _troupe_v1_ListJobsRequest, ListJobsRequest__Output as _troupe_v1_ListJobsRequest__Output } from './troupe/v1/ListJobsRequest';
import type { ListJobsResponse as _troupe_v1_ListJobsResponse, ListJobsResponse__Output as _troupe_v1_ListJobsResponse__Output } from './troupe/v1/ListJobsResponse';
import type { ListNodesRequest as _troupe_v1_ListNodesRequest, ListNodesRequest__Output as _troupe_v1_ListNodesRequest__Output } from './troupe/v1/ListNodesRequest';
import type { ListNodesResponse as _troupe_v1_ListNodesResponse, ListNodesResponse__Output as _troupe_v1_ListNodesResponse__Output } from './troupe/v1/ListNodesResponse';
import type { ModelEndpoint as _troupe_v1_ModelEndpoint, ModelEndpoint__Output as _troupe_v1_ModelEndpoint__Output } from './troupe/v1/ModelEndpoint';
import type { Node as _troupe_v1_Node, Node__Output as _troupe_v1_Node__Output } from './troupe/v1/Node';
import type { NodeServiceClient as _troupe_v1_NodeServiceClient, NodeServiceDefinition as _troupe_v1_NodeServiceDefinition } from './troupe/v1/NodeService';
import type { NodesUpdate as _troupe_v1_NodesUpdate, NodesUpdate__Output as _troupe_v1_NodesUpdate__Output } from './troupe/v1/NodesUpdate';
import type { RolloutRequest as _troupe_v1_RolloutRequest, RolloutRequest__Output as _troupe_v1_RolloutRequest__Output } from './troupe/v1/RolloutRequest';
import type { RolloutResponse as _troupe_v1_RolloutResponse, RolloutResponse__Output as _troupe_v1_RolloutResponse__Output } from './troupe/v1/RolloutResponse';
import type { RolloutResult as _troupe_v1_RolloutResult, RolloutResult__Output as _troupe_v1_RolloutResult__Output } from './troupe/v1/RolloutResult';
import type { RolloutUsage as _troupe_v1_RolloutUsage, RolloutUsage__Output as _troupe_v1_RolloutUsage__Output } from './troupe/v1/RolloutUsage';
import type { SamplingParams as _troupe_v1_SamplingParams, SamplingParams__Output as _troupe_v1_SamplingParams__Output } from './troupe/v1/SamplingParams';
import type { SubmitJobRequest as _troupe_v1_SubmitJobRequest, SubmitJobRequest__Output as _troupe_v1_SubmitJobRequest__Output } from './troupe/v1/SubmitJobRequest';
import type { SubmitJobResponse as _troupe_v1_SubmitJobResponse, SubmitJobResponse__Output as _troupe_v1_SubmitJobResponse__Output } from './troupe/v1/SubmitJobResponse';
import type { TaskFileChunk as _troupe_v1_TaskFileChunk, TaskFileChunk__Output as _troupe_v1_TaskFileChunk__Output } from './troupe/v1/TaskFileChunk';
import type { TaskFileUpload as _troupe_v1_TaskFileUpload, TaskFileUpload__Output as _troupe_v1_TaskFileUpload__Output } from './troupe/v1/TaskFileUpload';
import type { TaskResult as _troupe_v1_TaskResult, TaskResult__Output as _troupe_v1_TaskResult__Output } from './troupe/v1/TaskResult';
import type { WatchBudgetRequest as _troupe_v1_WatchBudgetRequest, WatchBudgetRequest__Output as _troupe_v1_WatchBudgetRequest__Output } from './troupe/v1/WatchBudgetRequest';
import type { WatchJobRequest as _troupe_v1_WatchJobRequest, WatchJobRequest__Output as _troupe_v1_WatchJobRequest__Output } from './troupe/v1/WatchJobRequest';
import type { WatchJobsRequest as _troupe_v1_WatchJobsRequest, WatchJobsRequest__Output as _troupe_v1_WatchJobsRequest__Output } from './troupe/v1/WatchJobsRequest';
import type { WatchNodesRequest as _troupe_v1_WatchNodesRequest, WatchNodesRequest__Output as _troupe_v1_WatchNodesRequest__Output } from './troupe/v1/WatchNodesRequest';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  troupe: {
    v1: {
      ArtifactChunk: MessageTypeDefinition<_troupe_v1_ArtifactChunk, _troupe_v1_ArtifactChunk__Output>
      BudgetLimits: MessageTypeDefinition<_troupe_v1_BudgetLimits, _troupe_v1_BudgetLimits__Output>
      BudgetReservation: MessageTypeDefinition<_troupe_v1_BudgetReservation, _troupe_v1_BudgetReservation__Output>
      BudgetReservationRef: MessageTypeDefinition<_troupe_v1_BudgetReservationRef, _troupe_v1_BudgetReservationRef__Output>
      BudgetScope: MessageTypeDefinition<_troupe_v1_BudgetScope, _troupe_v1_BudgetScope__Output>
      BudgetScopeRef: MessageTypeDefinition<_troupe_v1_BudgetScopeRef, _troupe_v1_BudgetScopeRef__Output>
      BudgetTotals: MessageTypeDefinition<_troupe_v1_BudgetTotals, _troupe_v1_BudgetTotals__Output>
      BudgetUpdate: MessageTypeDefinition<_troupe_v1_BudgetUpdate, _troupe_v1_BudgetUpdate__Output>
      CancelJobRequest: MessageTypeDefinition<_troupe_v1_CancelJobRequest, _troupe_v1_CancelJobRequest__Output>
      CancelJobResponse: MessageTypeDefinition<_troupe_v1_CancelJobResponse, _troupe_v1_CancelJobResponse__Output>
      DeleteJobRequest: MessageTypeDefinition<_troupe_v1_DeleteJobRequest, _troupe_v1_DeleteJobRequest__Output>
      DeleteJobResponse: MessageTypeDefinition<_troupe_v1_DeleteJobResponse, _troupe_v1_DeleteJobResponse__Output>
      DrainNodeRequest: MessageTypeDefinition<_troupe_v1_DrainNodeRequest, _troupe_v1_DrainNodeRequest__Output>
      DrainNodeResponse: MessageTypeDefinition<_troupe_v1_DrainNodeResponse, _troupe_v1_DrainNodeResponse__Output>
      GetArtifactRequest: MessageTypeDefinition<_troupe_v1_GetArtifactRequest, _troupe_v1_GetArtifactRequest__Output>
      GetBudgetRequest: MessageTypeDefinition<_troupe_v1_GetBudgetRequest, _troupe_v1_GetBudgetRequest__Output>
      GetBudgetResponse: MessageTypeDefinition<_troupe_v1_GetBudgetResponse, _troupe_v1_GetBudgetResponse__Output>
      GetJobRequest: MessageTypeDefinition<_troupe_v1_GetJobRequest, _troupe_v1_GetJobRequest__Output>
      GetResultsRequest: MessageTypeDefinition<_troupe_v1_GetResultsRequest, _troupe_v1_GetResultsRequest__Output>
      GetRolloutsRequest: MessageTypeDefinition<_troupe_v1_GetRolloutsRequest, _troupe_v1_GetRolloutsRequest__Output>
      Job: MessageTypeDefinition<_troupe_v1_Job, _troupe_v1_Job__Output>
      JobAggregate: MessageTypeDefinition<_troupe_v1_JobAggregate, _troupe_v1_JobAggregate__Output>
      JobEvent: MessageTypeDefinition<_troupe_v1_JobEvent, _troupe_v1_JobEvent__Output>
      JobEventType: EnumTypeDefinition
      JobProgress: MessageTypeDefinition<_troupe_v1_JobProgress, _troupe_v1_JobProgress__Output>
      JobResults: MessageTypeDefinition<_troupe_v1_JobResults, _troupe_v1_JobResults__Output>
      /**
       * Submits, inspects, watches and cancels jobs. Served by the coordinator.
       */
      JobService: SubtypeConstructor<typeof grpc.Client, _troupe_v1_JobServiceClient> & { service: _troupe_v1_JobServiceDefinition }
      JobState: EnumTypeDefinition
      JobsUpdate: MessageTypeDefinition<_troupe_v1_JobsUpdate, _troupe_v1_JobsUpdate__Output>
      ListJobsRequest: MessageTypeDefinition<_troupe_v1_ListJobsRequest, _troupe_v1_ListJobsRequest__Output>
      ListJobsResponse: MessageTypeDefinition<_troupe_v1_ListJobsResponse, _troupe_v1_ListJobsResponse__Output>
      ListNodesRequest: MessageTypeDefinition<_troupe_v1_ListNodesRequest, _troupe_v1_ListNodesRequest__Output>
      ListNodesResponse: MessageTypeDefinition<_troupe_v1_ListNodesResponse, _troupe_v1_ListNodesResponse__Output>
      ModelEndpoint: MessageTypeDefinition<_troupe_v1_ModelEndpoint, _troupe_v1_ModelEndpoint__Output>
      Node: MessageTypeDefinition<_troupe_v1_Node, _troupe_v1_Node__Output>
      /**
       * Lists and drains node agents. Served by the coordinator.
       */
      NodeService: SubtypeConstructor<typeof grpc.Client, _troupe_v1_NodeServiceClient> & { service: _troupe_v1_NodeServiceDefinition }
      NodeState: EnumTypeDefinition
      NodesUpdate: MessageTypeDefinition<_troupe_v1_NodesUpdate, _troupe_v1_NodesUpdate__Output>
      RolloutRequest: MessageTypeDefinition<_troupe_v1_RolloutRequest, _troupe_v1_RolloutRequest__Output>
      RolloutResponse: MessageTypeDefinition<_troupe_v1_RolloutResponse, _troupe_v1_RolloutResponse__Output>
      RolloutResult: MessageTypeDefinition<_troupe_v1_RolloutResult, _troupe_v1_RolloutResult__Output>
      RolloutUsage: MessageTypeDefinition<_troupe_v1_RolloutUsage, _troupe_v1_RolloutUsage__Output>
      SamplingParams: MessageTypeDefinition<_troupe_v1_SamplingParams, _troupe_v1_SamplingParams__Output>
      SpecFormat: EnumTypeDefinition
      SubmitJobRequest: MessageTypeDefinition<_troupe_v1_SubmitJobRequest, _troupe_v1_SubmitJobRequest__Output>
      SubmitJobResponse: MessageTypeDefinition<_troupe_v1_SubmitJobResponse, _troupe_v1_SubmitJobResponse__Output>
      TaskFileChunk: MessageTypeDefinition<_troupe_v1_TaskFileChunk, _troupe_v1_TaskFileChunk__Output>
      TaskFileUpload: MessageTypeDefinition<_troupe_v1_TaskFileUpload, _troupe_v1_TaskFileUpload__Output>
      TaskResult: MessageTypeDefinition<_troupe_v1_TaskResult, _troupe_v1_TaskResult__Output>
      TaskStatus: EnumTypeDefinition
      WatchBudgetRequest: MessageTypeDefinition<_troupe_v1_WatchBudgetRequest, _troupe_v1_WatchBudgetRequest__Output>
      WatchJobRequest: MessageTypeDefinition<_troupe_v1_WatchJobRequest, _troupe_v1_WatchJobRequest__Output>
      WatchJobsRequest: MessageTypeDefinition<_troupe_v1_WatchJobsRequest, _troupe_v1_WatchJobsRequest__Output>
      WatchNodesRequest: MessageTypeDefinition<_troupe_v1_WatchNodesRequest, _troupe_v1_WatchNodesRequest__Output>
    }
  }
}

