// Memory plans as POST /api/graph/plan answers them, for toy-mlp's TrainingLoop
// `train` fed by DataLoader `loader` (the shape of the route's example answer).
import type { MemoryPlan } from '../src/api/types';

/** A plan that fits: 1.6 KiB of 8 GiB. */
export function samplePlan(over: Partial<MemoryPlan> = {}): MemoryPlan {
  return {
    node_id: 'train',
    device: 'cpu',
    available_bytes: 8 * 1024 ** 3,
    available_source: 'available RAM (MemAvailable)',
    precision: 'fp32',
    micro_batch: 32,
    accumulate_steps: 1,
    effective_batch: 32,
    world_size: 1,
    measured: [
      { micro_batch: 16, peak_bytes: 123 },
      { micro_batch: 32, peak_bytes: 456 },
    ],
    fixed_bytes: 1000,
    per_sample_bytes: 20,
    predicted_peak_bytes: 1640,
    fits: true,
    max_micro_batch: 4000,
    breakdown: { parameter_bytes: 100, gradient_bytes: 100, optimizer_state_bytes: 200, other_fixed_bytes: 600, activation_bytes: 640 },
    options: [
      { precision: 'fp32', micro_batch: 32, accumulate_steps: 1, effective_batch: 32, predicted_peak_bytes: 1640, fits: true },
      { precision: 'bf16', micro_batch: 32, accumulate_steps: 1, effective_batch: 32, predicted_peak_bytes: 1300, fits: true },
      { precision: 'fp32', micro_batch: 16, accumulate_steps: 2, effective_batch: 32, predicted_peak_bytes: 1320, fits: true },
    ],
    notes: ['activation-bound: the activations grow with the micro-batch'],
    batch_source: { node_id: 'loader', node_type: 'DataLoader', param: 'batch_size' },
    ...over,
  };
}

/** A plan that does not fit: 12 GiB predicted of 8, and only micro-batches of 8 fit. */
export function tightPlan(): MemoryPlan {
  const GIB = 1024 ** 3;
  return samplePlan({
    predicted_peak_bytes: 12 * GIB,
    fits: false,
    max_micro_batch: 8,
    breakdown: { parameter_bytes: GIB, gradient_bytes: GIB, optimizer_state_bytes: 2 * GIB, other_fixed_bytes: 0, activation_bytes: 8 * GIB },
    options: [
      { precision: 'fp32', micro_batch: 32, accumulate_steps: 1, effective_batch: 32, predicted_peak_bytes: 12 * GIB, fits: false },
      { precision: 'bf16', micro_batch: 32, accumulate_steps: 1, effective_batch: 32, predicted_peak_bytes: 9 * GIB, fits: false },
      { precision: 'fp32', micro_batch: 8, accumulate_steps: 4, effective_batch: 32, predicted_peak_bytes: 6 * GIB, fits: true },
      { precision: 'bf16', micro_batch: 16, accumulate_steps: 2, effective_batch: 32, predicted_peak_bytes: 7 * GIB, fits: true },
      { precision: 'bf16', micro_batch: 8, accumulate_steps: 1, effective_batch: 8, predicted_peak_bytes: 5 * GIB, fits: true },
    ],
  });
}
