/**
 * `tsc <flags> <files>` as the consumer test runs it, reporting only the errors in the project's own
 * files and in the files of the installed `@signalbox/*` packages (their declaration files), not in
 * other packages' declarations (openai's, Node's types, the MCP SDK's...). The program is the one tsc
 * builds from the same command line, so `@signalbox`'s declarations are checked exactly as tsc checks
 * them; tsc would check every file, and half its time goes to the dependencies' declarations.
 *
 *   node check-declarations.mjs --strict --module nodenext --skipLibCheck false --noEmit a.ts b.ts
 *
 * Run in the consumer project. Prints `{ checked, errors }` as JSON: the files checked (relative to
 * the project) and the errors as tsc prints them; exits with 1 when there are errors.
 */
import path from 'node:path'
import ts from 'typescript'

const commandLine = ts.parseCommandLine(process.argv.slice(2))
const { options, fileNames } = commandLine
// With skipLibCheck (or skipDefaultLibCheck) no declaration file is checked: nothing would be proven.
if (options.skipLibCheck !== false || options.skipDefaultLibCheck) {
  console.error('check-declarations: pass --skipLibCheck false')
  process.exit(2)
}
const program = ts.createProgram({ rootNames: fileNames, options })
const cwd = process.cwd()
const ours = program.getSourceFiles().filter((file) => {
  const relative = path.relative(cwd, file.fileName).split(/[\\/]/)
  return !relative.includes('node_modules') || (relative[0] === 'node_modules' && relative[1] === '@signalbox')
})
const diagnostics = [
  ...commandLine.errors,
  ...program.getOptionsDiagnostics(),
  ...program.getGlobalDiagnostics(),
  ...ours.flatMap((file) => [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]),
]
const errors = ts.formatDiagnostics(ts.sortAndDeduplicateDiagnostics(diagnostics), {
  getCanonicalFileName: (fileName) => fileName,
  getCurrentDirectory: () => cwd,
  getNewLine: () => '\n',
})
console.log(JSON.stringify({ checked: ours.map((file) => path.relative(cwd, file.fileName)), errors }))
process.exitCode = diagnostics.length > 0 ? 1 : 0
