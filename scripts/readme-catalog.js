#!/usr/bin/env node
// Rewrites README.md's event catalog table from events/catalog.ts (events/catalog-table.ts).
import { readFileSync, writeFileSync } from 'node:fs';
import { tsImport } from 'tsx/esm/api';

const readme = new URL('../README.md', import.meta.url);
const { withCatalogTable } = await tsImport('../events/catalog-table.ts', import.meta.url);
writeFileSync(readme, withCatalogTable(readFileSync(readme, 'utf8')));
