import { describeDryRun } from './dry-run-simulate.ts';

describeDryRun('policy-file', 'a policy file dryRun: true');
