// The docs never drift from the code: every code block in docs/*.md is marked with where it comes
// from (`<!-- from path -->`: it must appear verbatim in that file, up to a common indentation the
// Markdown formatter removes from an excerpt) or as a command
// (`<!-- command -->`: every `npm run <script>` it runs must exist); relative links must resolve.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const root = new URL('../../', import.meta.url).pathname;
const scripts = Object.keys(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts);
const docs = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md'));

interface Block {
  marker: string | undefined;
  code: string;
  line: number;
}

/** Fenced code blocks with the HTML comment on the line just above each. */
function blocksOf(text: string): Block[] {
  const lines = text.split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```\w*$/.test(lines[i] ?? '') || lines[i] === '```') continue;
    const end = lines.indexOf('```', i + 1);
    assert.ok(end > i, `unclosed code block at line ${i + 1}`);
    const marker = /^<!-- (.+) -->$/.exec(lines[i - 1] ?? '')?.[1];
    out.push({ marker, code: lines.slice(i + 1, end).join('\n'), line: i + 1 });
    i = end;
  }
  return out;
}

/** Whether `block`'s lines are consecutive lines of `file`, each with the same indentation added. */
function appearsIn(block: string, file: string): boolean {
  const want = block.split('\n');
  const have = file.split('\n');
  const first = want[0] ?? '';
  for (let i = 0; i + want.length <= have.length; i++) {
    const line = have[i] ?? '';
    if (!line.endsWith(first)) continue;
    const indent = line.slice(0, line.length - first.length);
    if (indent.trim() !== '') continue;
    if (want.every((w, k) => have[i + k] === (w === '' ? '' : indent + w))) return true;
  }
  return false;
}

for (const doc of docs) {
  describe(`docs/${doc}`, () => {
    const text = readFileSync(join(root, 'docs', doc), 'utf8');
    const blocks = blocksOf(text);

    it('marks every code block with its source or as a command', () => {
      for (const b of blocks)
        assert.ok(
          b.marker?.startsWith('from ') || b.marker === 'command',
          `line ${b.line}: a code block needs <!-- from path --> or <!-- command --> above it`,
        );
    });

    for (const b of blocks.filter((x) => x.marker?.startsWith('from '))) {
      const source = b.marker?.slice('from '.length) ?? '';
      it(`line ${b.line}: appears verbatim in ${source}`, () => {
        assert.ok(existsSync(join(root, source)), `${source} exists`);
        assert.ok(
          appearsIn(b.code, readFileSync(join(root, source), 'utf8')),
          `the block is not in ${source}:\n${b.code}`,
        );
      });
    }

    it('runs only npm scripts that exist', () => {
      for (const b of blocks.filter((x) => x.marker === 'command'))
        for (const m of b.code.matchAll(/npm run ([\w:-]+)/g))
          assert.ok(scripts.includes(m[1] ?? ''), `line ${b.line}: no npm script "${m[1]}"`);
    });

    it('links only to files that exist in the repository', () => {
      for (const m of text.matchAll(/\]\(([^)#]+)(#[^)]*)?\)/g)) {
        const target = m[1] ?? '';
        if (/^[a-z]+:/.test(target)) continue;
        assert.ok(existsSync(join(root, 'docs', target)), `broken link ${target}`);
        assert.ok(join(root, 'docs', target).startsWith(root), `${target} leaves the repository`);
      }
    });
  });
}
