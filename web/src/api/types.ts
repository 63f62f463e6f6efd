// The server's shapes, as Codefy sends them (CodefyUI's names). Only what the
// editor reads is typed; everything else passes through untouched.

/** A port's type, CodefyUI's spelling ("TENSOR", "LOSS_FN", "TRIGGER"...). */
export type DataType = string;

export type ParamType = 'int' | 'float' | 'string' | 'bool' | 'select' | 'model_file' | 'data_file' | 'tensor_grid';

export interface PortDefinition {
  name: string;
  data_type: DataType;
  description: string;
  optional: boolean;
}

export interface ParamDefinition {
  name: string;
  param_type: ParamType | string;
  default: unknown;
  description: string;
  options: string[];
  min_value: number | null;
  max_value: number | null;
  /** Folded under "Advanced" in the editor (absent = false). */
  advanced?: boolean;
}

/** One entry of GET /api/nodes. */
export interface NodeDefinition {
  node_name: string;
  category: string;
  description: string;
  inputs: PortDefinition[];
  outputs: PortDefinition[];
  params: ParamDefinition[];
  /** Outputs whose number a param sets (Split's chunk_0 .. chunk_{chunks-1}); `outputs` lists the default's. */
  output_family?: { prefix: string; count_param: string; data_type: string };
}

/** One entry of GET /api/system/devices' `devices`. */
export interface DeviceEntry {
  device: string;
  label: string;
  value?: string;
  detail?: string;
  precisions?: string[];
  free_bytes: number | null;
  total_bytes: number | null;
  available?: boolean;
}

export interface DevicesResponse {
  default: string;
  devices: DeviceEntry[];
}

/** One entry of GET /api/examples/list. */
export interface ExampleEntry {
  name: string;
  description: string;
  category: string;
  path: string;
  source?: string;
  node_count: number;
  edge_count: number;
}

/** One entry of GET /api/graph/list. */
export interface SavedGraphEntry {
  name: string;
  file: string;
  modified: number;
}

/** One entry of GET /api/models. */
export interface ModelFileEntry {
  filename: string;
  size: number;
  /** Unix seconds; neither Codefy nor CodefyUI sends it today, so it is shown only when present. */
  modified?: number;
}

/** GET /api/types: the data types and which output type may feed which input type. */
export interface TypesResponse {
  data_types: DataType[];
  compatible: Record<DataType, DataType[]>;
}

/** One problem of POST /api/graph/validate's `issues`. */
export interface ValidationIssue {
  graph?: string;
  node_id: string;
  node_type?: string;
  /** `param "epochs"`, `input "model"`, `edge e3`, or empty. */
  field: string;
  message: string;
}

export interface ValidateResponse {
  valid: boolean;
  errors: string[];
  issues?: ValidationIssue[];
}

// ── graph.json (CodefyUI's file) ─────────────────────────────────────────────

export interface GraphJsonNode {
  id: string;
  type: string;
  position?: { x: number; y: number };
  data?: { params?: Record<string, unknown>; internalParams?: unknown; [key: string]: unknown };
  [key: string]: unknown;
}

export interface GraphJsonEdge {
  id?: string;
  source: string;
  target: string;
  sourceHandle?: string | null;
  targetHandle?: string | null;
  type?: 'data' | 'trigger' | string;
  [key: string]: unknown;
}

export interface GraphJson {
  name?: string;
  description?: string;
  nodes: GraphJsonNode[];
  edges: GraphJsonEdge[];
  [key: string]: unknown;
}

// ── WebSocket /ws/execution ──────────────────────────────────────────────────

/**
 * The fields of a training loop's progress frames (src/train/progress.h: config, batch and epoch
 * events); tests/protocol.test.ts checks them against the server's schema (`training_progress`).
 */
export const PROGRESS_EVENT_FIELDS = [
  'event',
  'epoch',
  'total_epochs',
  'batch',
  'total_batches',
  'step',
  'loss',
  'val_loss',
  'val_accuracy',
  'peak_memory_bytes',
  'lr',
  'samples_per_s',
  'seconds',
  'grad_norm',
  'config',
  'timestep',
  'patience_counter',
  'best_epoch',
  'losses',
  'val_losses',
  'val_accuracies',
] as const;

/** TrainingLoop's progress frames (src/train/progress.h). */
export interface ProgressEvent {
  event: 'config' | 'batch' | 'epoch' | string;
  epoch?: number;
  total_epochs?: number;
  batch?: number;
  total_batches?: number;
  step?: number;
  loss?: number;
  val_loss?: number;
  /** Epoch events of a classification loss with validation. */
  val_accuracy?: number;
  /** Epoch events: peak bytes per device so far (Codefy's addition). */
  peak_memory_bytes?: Record<string, number>;
  lr?: number;
  samples_per_s?: number;
  seconds?: number;
  grad_norm?: number;
  config?: Record<string, unknown>;
  /** A diffusion sampler's batch progress: its current timestep. */
  timestep?: number;
  /** Epoch events with early stopping. */
  patience_counter?: number;
  best_epoch?: number;
  /** Epoch events: the history so far (first and last epoch, and a few times a second). */
  losses?: number[];
  val_losses?: number[];
  val_accuracies?: number[];
  [key: string]: unknown;
}

export type NodeRunStatus = 'running' | 'completed' | 'cached' | 'error' | 'skipped';

/**
 * The message types /ws/execution sends. tests/protocol.test.ts checks these
 * (and SERVER_MESSAGE_FIELDS) against what `codefy protocol --json` prints
 * (tests/fixtures/protocol.json), so the editor's types follow the server's.
 */
export const SERVER_MESSAGE_TYPES = [
  'execution_start',
  'execution_complete',
  'execution_error',
  'execution_stopped',
  'cache_cleared',
  'warning',
  'error',
  'node_progress',
  'node_status',
] as const;
export type ServerMessageType = (typeof SERVER_MESSAGE_TYPES)[number];

/** A run's error kinds (Codefy's RunError) and a run envelope's error codes (CodefyUI's). */
export const RUN_ERROR_KINDS = [
  'invalid_graph',
  'usage',
  'node_error',
  'out_of_memory',
  'stopped',
  'distributed',
  'error',
] as const;
export type RunErrorKind = (typeof RUN_ERROR_KINDS)[number];
export const ENVELOPE_ERROR_CODES = ['stopped', 'out_of_memory', 'execution_error'] as const;
export type EnvelopeErrorCode = (typeof ENVELOPE_ERROR_CODES)[number];

export type ServerMessage =
  | { type: 'execution_start'; run_id?: string; server_run_id?: string }
  | { type: 'execution_complete' }
  | { type: 'execution_error'; error: string }
  | { type: 'execution_stopped' }
  | { type: 'cache_cleared' }
  | { type: 'warning'; node_id: string | null; message: string }
  | { type: 'error'; error: string }
  /** Codefy's per-batch training progress (CodefyUI's client ignores the type). */
  | { type: 'node_progress'; node_id: string; progress?: ProgressEvent }
  | {
      type: 'node_status';
      node_id: string;
      /** `interrupted`: the node a Stop ended (CodefyUI's status); `log`: older servers' Print text. */
      status: NodeRunStatus | 'progress' | 'log' | 'interrupted' | string;
      error?: string;
      /** Codefy's additions on an error: the param or port it blames (`param "epochs"`), an out-of-memory report, a Stop. */
      field?: string;
      out_of_memory?: boolean;
      /** Set with `interrupted` (and, from older servers, with error "stopped"). */
      stopped?: boolean;
      progress?: ProgressEvent;
      /** What the node printed, on its completed message. */
      log?: string;
      /** A rendered image (base64 PNG) on Visualize's completed message. */
      image?: string;
      output_summary?: unknown;
    };

type MessageOf<T extends ServerMessageType> = Extract<ServerMessage, { type: T }>;
/** Each message type's fields besides `type`: the type check keeps them names the union above declares. */
export const SERVER_MESSAGE_FIELDS: { [T in ServerMessageType]: readonly Exclude<keyof MessageOf<T>, 'type'>[] } = {
  execution_start: ['run_id', 'server_run_id'],
  execution_complete: [],
  execution_error: ['error'],
  execution_stopped: [],
  cache_cleared: [],
  warning: ['node_id', 'message'],
  error: ['error'],
  node_progress: ['node_id', 'progress'],
  node_status: [
    'node_id',
    'status',
    'error',
    'field',
    'out_of_memory',
    'stopped',
    'progress',
    'log',
    'image',
    'output_summary',
  ],
};

/** What the editor sends on Run (CodefyUI's execute message, the fields Codefy reads). */
export interface ExecuteMessage extends GraphJson {
  action: 'execute';
  graph_id: string;
  device: string;
  run_id: string;
  changed_nodes?: string[];
  record_outputs: boolean;
  weights_persistent: boolean;
  /** The example the graph was opened from (Codefy's field): relative file paths resolve in its folder. */
  example?: string;
  /** Codefy's field: this editor, so the run history tells its runs from CodefyUI's client's. */
  client: 'codefy';
}

// ── POST /api/graph/plan (the memory planner) ────────────────────────────────

/** What the plan request may add beside the graph, under `plan_options` (each optional). */
export interface PlanOptions {
  /** A memory budget in MiB instead of the device's available memory. */
  budget_mb?: number;
  /** The effective batch the options should keep (micro-batch × accumulate steps); default: the graph's. */
  target_effective_batch?: number;
  /** Headroom: a configuration fits when its peak × (1 + margin) fits (default 0.1). */
  margin?: number;
  /** The device to plan for: the editor's device menu ("auto": each node's own device param). */
  device?: string;
  /** The example the graph was opened from: its relative file paths resolve in the example's folder (as a run's). */
  example?: string;
}

/** One measured training step of the planner: the peak at a micro-batch. */
export interface PlanMeasurement {
  micro_batch: number;
  peak_bytes: number;
}

/** What the predicted peak is made of, in bytes. */
export interface PlanBreakdown {
  parameter_bytes: number;
  gradient_bytes: number;
  optimizer_state_bytes: number;
  other_fixed_bytes: number;
  activation_bytes: number;
}

/** Another way to train with the same (or the target) effective batch, and what it would need. */
export interface PlanOption {
  precision: string;
  micro_batch: number;
  accumulate_steps: number;
  effective_batch: number;
  predicted_peak_bytes: number;
  fits: boolean;
}

/** The node and param that set the micro-batch (DataLoader.batch_size), which Apply changes. */
export interface PlanBatchSource {
  node_id: string;
  node_type: string;
  param: string;
}

/** One TrainingLoop's memory plan. */
export interface MemoryPlan {
  node_id: string;
  node_type?: string;
  device: string;
  available_bytes: number;
  /** Where `available_bytes` came from ("available RAM (MemAvailable)", "budget", …). */
  available_source: string;
  precision: string;
  micro_batch: number;
  accumulate_steps: number;
  effective_batch: number;
  world_size: number;
  measured: PlanMeasurement[];
  fixed_bytes: number;
  per_sample_bytes: number;
  /** The validation pass's peak when it is above training's (0: below); the prediction is at least this. */
  validation_peak_bytes?: number;
  predicted_peak_bytes: number;
  fits: boolean;
  /** The largest micro-batch that fits in the plan's precision (null: any). */
  max_micro_batch: number | null;
  breakdown: PlanBreakdown;
  options: PlanOption[];
  notes: string[];
  /** The param Apply sets the micro-batch through; absent (or with an empty node_id) when none could be named. */
  batch_source?: PlanBatchSource | null;
}

/** POST /api/graph/plan's answer: a plan per TrainingLoop, and whether all of them fit. */
export interface PlanResponse {
  plans: MemoryPlan[];
  fits: boolean;
  /** What choosing the device said (a device that is not there, and what was used instead). */
  warnings?: string[];
}
