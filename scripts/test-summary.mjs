// Prints the plain closing line CI reads ("N passed, N failed, N skipped") from
// vitest's JSON report; exits non-zero when tests failed or none ran.
import { readFileSync } from 'node:fs';

const r = JSON.parse(readFileSync('artifacts/vitest-report.json', 'utf8'));
const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
console.log(`tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${skipped} skipped`);
process.exit(r.numFailedTests > 0 || r.numPassedTests === 0 ? 1 : 0);
