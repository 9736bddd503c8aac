/** The election messages as they travel between nodes (`POST /elections`), validated at the edge. */
import { z } from 'zod';
import type { ElectionMessage } from './elections.js';

const CandidateSchema = z.object({
  instanceId: z.string(), epochNumber: z.number(), epochPosition: z.number(), epochId: z.string(),
  epochLeaderInstanceId: z.string(), writerCheckpoint: z.number(), chaserCheckpoint: z.number(),
  nodePriority: z.number(), proposalNumber: z.number(), resigning: z.boolean().optional(),
});

export const ElectionMessageSchema: z.ZodType<ElectionMessage> = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ViewChange'), from: z.string(), view: z.number().int().min(0) }),
  z.object({ type: z.literal('Prepare'), from: z.string(), view: z.number().int().min(0) }),
  z.object({ type: z.literal('PrepareOk'), from: z.string(), view: z.number().int().min(0), candidate: CandidateSchema }),
  z.object({ type: z.literal('Proposal'), from: z.string(), view: z.number().int().min(0), leader: CandidateSchema, proposalNumber: z.number() }),
  z.object({ type: z.literal('Accept'), from: z.string(), view: z.number().int().min(0), leaderId: z.string(), proposalNumber: z.number() }),
]);
