import { createTwoFilesPatch } from 'diff';

/** One island's scores after a generation. */
export interface IslandPoint {
  best: number | null;
  mean: number | null;
  size: number;
}

/** One node of the best program's lineage, oldest first. */
export interface LineageNode {
  id: string;
  generation: number;
  island: number;
  operator: string;
  score: number | null;
  parentIds: string[];
  /** Unified diff from its first parent (empty for a seed or draft). */
  diffFromParent: string;
}

/** What the evolution page draws for one evolve task. */
export interface EvolveView {
  direction: 'maximise' | 'minimise';
  generations: {
    generation: number;
    evaluations: number;
    elapsedMs: number;
    islands: IslandPoint[];
  }[];
  lineage: LineageNode[];
  selectedNodeId: string | null;
  /** Facts of the run (status, stop reason, scores). */
  summary: Record<string, unknown>;
}

interface NodeLike {
  type: 'node';
  attemptId: string;
  generation: number;
  island: number;
  operator: string;
  parentIds: string[];
  program: { source: string };
  result: { score: number | null } | null;
}

function isNode(r: unknown): r is NodeLike {
  if (typeof r !== 'object' || r === null) return false;
  const o = r as Record<string, unknown>;
  return o['type'] === 'node' && typeof o['attemptId'] === 'string';
}

/** Most lineage steps shown (a search of thousands of generations would not fit a page). */
const MAX_LINEAGE = 50;
/** Longest diff shipped per step, characters. */
const MAX_DIFF_CHARS = 20_000;

/**
 * Builds the evolution page from the task's artifacts as the `evolve` driver stores them:
 * `journal-summary.json` (per-generation island scores, the selected node) and, when the job
 * kept it (`config.saveJournal`, the default), `journal.jsonl` for the lineage and diffs.
 */
export function evolveView(summaryJson: string, journalJsonl: string | undefined): EvolveView {
  const summary = JSON.parse(summaryJson) as Record<string, unknown>;
  const generations = Array.isArray(summary['generations'])
    ? (summary['generations'] as EvolveView['generations'])
    : [];
  const selection = summary['selection'] as { nodeId?: string | null } | undefined;
  const selectedNodeId = selection?.nodeId ?? null;
  const lineage: LineageNode[] = [];
  if (journalJsonl !== undefined && selectedNodeId !== null) {
    const nodes = new Map<string, NodeLike>();
    for (const line of journalJsonl.split('\n')) {
      if (!line.trim()) continue;
      try {
        const r: unknown = JSON.parse(line);
        if (isNode(r)) nodes.set(r.attemptId, r);
      } catch {
        // A torn last line of a journal is skipped, as the driver's own replay does.
      }
    }
    const chain: NodeLike[] = [];
    const seen = new Set<string>();
    let cur = nodes.get(selectedNodeId);
    while (cur && !seen.has(cur.attemptId) && chain.length < MAX_LINEAGE) {
      chain.push(cur);
      seen.add(cur.attemptId);
      const parent = cur.parentIds[0];
      cur = parent === undefined ? undefined : nodes.get(parent);
    }
    chain.reverse();
    chain.forEach((n, i) => {
      const parent = i > 0 ? chain[i - 1] : undefined;
      let diff = parent
        ? createTwoFilesPatch(
            parent.attemptId,
            n.attemptId,
            parent.program.source,
            n.program.source,
          )
        : '';
      if (diff.length > MAX_DIFF_CHARS) diff = `${diff.slice(0, MAX_DIFF_CHARS)}\n… (cut)`;
      lineage.push({
        id: n.attemptId,
        generation: n.generation,
        island: n.island,
        operator: n.operator,
        score: n.result?.score ?? null,
        parentIds: n.parentIds,
        diffFromParent: diff,
      });
    });
  }
  const { generations: _g, ...facts } = summary;
  return {
    direction: summary['direction'] === 'minimise' ? 'minimise' : 'maximise',
    generations,
    lineage,
    selectedNodeId,
    summary: facts,
  };
}
