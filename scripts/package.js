#!/usr/bin/env node
// `npm run package [-- --target aws|alibaba] [--stage NAME] [serverless package options]`
// aws (default): the bundles (scripts/build.js), then `serverless package` with the options given.
// alibaba: FC 3.0 bundles under .build/alibaba/code/<function>.zip and the ROS template
// .build/alibaba/template.json, offline and without credentials (docs/deploy-alibaba.md).
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tsImport } from 'tsx/esm/api';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const take = (flag, fallback) => {
  const i = args.indexOf(flag);
  if (i < 0) return fallback;
  const v = args[i + 1];
  if (v === undefined || v.startsWith('--')) {
    console.error(`${flag} needs a value`);
    process.exit(2);
  }
  args.splice(i, 2);
  return v;
};
if (args.includes('--help') || args.includes('-h')) {
  console.log(
    [
      'npm run package [-- --target aws|alibaba] [--stage NAME] [serverless options]',
      '  --target aws      (default) bundles, then `serverless package` (.serverless/, .build/artifacts/)',
      '  --target alibaba  FC 3.0 packages .build/alibaba/code/<function>.zip and the ROS template',
      '                    .build/alibaba/template.json (docs/deploy-alibaba.md); offline, no credentials',
      '  --stage NAME      the stage in resource names (default dev)',
    ].join('\n'),
  );
  process.exit(0);
}
const target = take('--target', 'aws');
const run = (cmd, argv) => {
  const r = spawnSync(cmd, argv, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
};
if (target === 'aws') {
  run(process.execPath, [join(root, 'scripts', 'build.js')]);
  run('serverless', ['package', ...args]);
  process.exit(0);
}
if (target !== 'alibaba') {
  console.error(`--target must be aws or alibaba (got ${JSON.stringify(target)})`);
  process.exit(2);
}
const stage = take('--stage', 'dev');
if (!/^[a-z0-9-]{1,20}$/.test(stage)) {
  console.error(`--stage: lower-case letters, digits and - (got ${JSON.stringify(stage)})`);
  process.exit(2);
}
if (args.length > 0) {
  console.error(`--target alibaba takes no other options (got ${args.join(' ')})`);
  process.exit(2);
}
run(process.execPath, [join(root, 'scripts', 'build.js'), '--target', 'alibaba']);
const { alibabaTemplate, alibabaTemplateInput } = await tsImport('../infra/alicloud/ros-template.ts', import.meta.url);
const template = alibabaTemplate(alibabaTemplateInput(root, stage));
const out = join(root, '.build', 'alibaba', 'template.json');
writeFileSync(out, JSON.stringify(template, null, 2) + '\n');
console.log(
  `ROS template ${out.slice(root.length + 1)} (stage ${stage}, ${Object.keys(template.Resources).length} resources); ` +
    'upload .build/alibaba/code/*.zip to OSS under CodePrefix, then create the stack (docs/deploy-alibaba.md)',
);
