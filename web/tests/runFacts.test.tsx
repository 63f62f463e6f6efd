// @vitest-environment jsdom
import './dom';
import { cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { RunFacts } from '../src/charts/RunFacts';

afterEach(() => cleanup());

describe('run facts panel', () => {
  it('shows precision asked and used with the reason, effective batch as micro × steps, speed and memory per device', () => {
    render(
      <RunFacts
        facts={{
          device: 'cuda:0',
          precision: 'fp32',
          precisionRequested: 'fp16',
          precisionReason: 'precision fp16 is not available: float16 on CUDA only; training in fp32',
          batchSize: 32,
          accumulateSteps: 4,
          effectiveBatchSize: 128,
          samplesPerS: 12345.6,
          peakMemory: { cpu: 321_600_000, 'cuda:0': 1.5 * 1024 ** 3 },
        }}
      />,
    );
    expect(screen.getByTestId('fact-precision').textContent).toContain('fp32 (asked fp16)');
    expect(screen.getByTestId('fact-precision').textContent).toContain('float16 on CUDA only');
    expect(screen.getByTestId('fact-batch').textContent).toBe('128 = 32 × 4');
    expect(screen.getByTestId('fact-speed').textContent).toBe('12,346');
    expect(screen.getByTestId('fact-memory').textContent).toBe('cpu 306.7 MiBcuda:0 1.50 GiB');
  });

  it('a precision that did not fall back is one name; nothing known yet says so', () => {
    render(<RunFacts facts={{ precision: 'bf16', precisionRequested: 'bf16' }} />);
    expect(screen.getByTestId('fact-precision').textContent).toBe('bf16');
    expect(screen.queryByTestId('fact-memory')).toBeNull();
    cleanup();
    render(<RunFacts facts={undefined} />);
    expect(screen.getByTestId('run-facts').textContent).toContain('appear once a TrainingLoop starts');
  });
});
