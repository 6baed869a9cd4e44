// The OpenAPI paths and schemas of events (webhook messages), their attempts, and resending one.
import {
  errors,
  id,
  idempotencyHeader,
  idParam,
  int,
  json,
  nullable,
  page,
  pageQuery,
  problemResponse,
  read,
  ref,
  str,
  time,
} from './shared.ts';
import type { Paths, Schema } from './shared.ts';

const statuses = ['pending', 'delivered', 'failed', 'dead'];

export const EVENT_PATHS: Paths = {
  '/v1/events': {
    // Not list(): this one has always named its responses before its parameters, and the JSON keeps that order.
    get: {
      summary: 'List events, newest first',
      responses: { 200: json(page('Event')), ...errors },
      parameters: pageQuery(
        { name: 'subscription', in: 'query', schema: id },
        { name: 'endpoint', in: 'query', schema: id },
        { name: 'status', in: 'query', schema: { enum: statuses } },
      ),
    },
  },
  '/v1/events/{id}': {
    get: read('Read an event with its payload and attempts', 'EventDetail'),
  },
  '/v1/events/{id}/resend': {
    post: {
      summary:
        'Queue a delivered, dead or failed event again (same webhook-id and body, fresh retry schedule, in sequence order)',
      parameters: [idParam, idempotencyHeader],
      responses: {
        200: json(ref('Event')),
        409: problemResponse('Not tried yet, or being sent right now'),
        ...errors,
      },
    },
  },
};

export const EVENT_SCHEMAS: Record<string, Schema> = {
  Event: {
    type: 'object',
    required: [
      'id',
      'type',
      'status',
      'endpoint',
      'subscription',
      'sequence',
      'attempt_count',
      'created_at',
    ],
    properties: {
      id,
      type: { enum: ['subscription.entries', 'endpoint.test'] },
      status: {
        enum: statuses,
        description:
          'pending: not tried yet; failed: an attempt failed and a retry is scheduled; dead: every retry failed.',
      },
      endpoint: id,
      subscription: nullable(id),
      sequence: nullable(
        int({ description: '1, 2, 3… per subscription (data.sequence in the payload).' }),
      ),
      attempt_count: int({
        description: 'Attempts since the event was last queued (a resend starts again at 0).',
      }),
      next_attempt_at: nullable(time),
      last_status_code: nullable(int()),
      last_error: nullable(str()),
      created_at: time,
      delivered_at: nullable(time),
      updated_at: time,
    },
  },
  Attempt: {
    type: 'object',
    required: ['started_at', 'status_code', 'duration_ms', 'error', 'response_body'],
    properties: {
      started_at: time,
      status_code: nullable(int()),
      duration_ms: int(),
      error: nullable(str()),
      response_body: nullable(str({ description: "The first 4 KiB of the receiver's answer." })),
    },
  },
  EventDetail: {
    allOf: [
      ref('Event'),
      {
        type: 'object',
        required: ['payload', 'attempts'],
        properties: {
          payload: {
            type: 'object',
            description: 'The webhook body, exactly as sent on every attempt.',
          },
          attempts: { type: 'array', items: ref('Attempt') },
        },
      },
    ],
  },
};
