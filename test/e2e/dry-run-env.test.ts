import { describeDryRun } from './dry-run-simulate.ts';

describeDryRun('env', 'DRY_RUN=true');
