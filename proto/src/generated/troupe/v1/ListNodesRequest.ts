// Original file: troupe/v1/jobs.proto


export interface ListNodesRequest {
}

export interface ListNodesRequest__Output {
}
