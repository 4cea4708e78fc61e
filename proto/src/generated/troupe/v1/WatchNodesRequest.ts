// Original file: troupe/v1/jobs.proto


export interface WatchNodesRequest {
}

export interface WatchNodesRequest__Output {
}
