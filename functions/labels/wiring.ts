/**
 * The node labeler's own configuration, from its environment:
 *   LABELER_CONFIG_FILE  YAML/JSON (core/config.ts): keys, prefix, model names, GFD's prefix.
 *                        Unset: the defaults (accelerator, gpu-reflex.io/gpu.count, …).
 */
import { configFileFromEnv, wireFromEnv, type FunctionDeps } from '../lib/wiring.ts';
import { DEFAULT_LABELER_CONFIG, LabelerConfigError, parseLabelerConfig, type LabelerConfig } from './core/config.ts';

export type LabelWiring = FunctionDeps<{ labelerConfig: LabelerConfig }>;

export function labelerConfigFromEnv(env: NodeJS.ProcessEnv): LabelerConfig {
  return (
    configFileFromEnv(env, 'LABELER_CONFIG_FILE', parseLabelerConfig, LabelerConfigError) ?? DEFAULT_LABELER_CONFIG
  );
}

export function wireLabels(service: string, env: NodeJS.ProcessEnv = process.env): Promise<LabelWiring> {
  return wireFromEnv(service, (own) => ({ own: { labelerConfig: labelerConfigFromEnv(own) } }), env);
}
