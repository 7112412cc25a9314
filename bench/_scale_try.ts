import { scaleMemoryScenario } from './scenarios/scale.ts'
import { renderTable } from './lib/report.ts'
for (const t of await scaleMemoryScenario([1000, 10000])) { console.log(t.title, '\n', t.note); console.log(renderTable(t, 'text')) }
