import { AppLink, PageHeader } from './components';
import { DocumentsPanel } from './documents-panel';
import { FactsPanel } from './facts-panel';
import { FilesPanel } from './files-panel';
import { LearnedPanel } from './learned-panel';
import { SearchPanel } from './search-panel';
import { SkillsPanel } from './skills-panel';

const TABS = [
  { path: '/memory', label: 'Facts' },
  { path: '/memory/learned', label: 'Learned' },
  { path: '/memory/skills', label: 'Skills' },
  { path: '/memory/files', label: 'Files' },
  { path: '/memory/documents', label: 'Documents' },
  { path: '/memory/search', label: 'Search' },
] as const;

function CurrentPanel({ path }: { path: (typeof TABS)[number]['path'] }) {
  if (path === '/memory/learned') return <LearnedPanel />;
  if (path === '/memory/skills') return <SkillsPanel />;
  if (path === '/memory/files') return <FilesPanel />;
  if (path === '/memory/documents') return <DocumentsPanel />;
  if (path === '/memory/search') return <SearchPanel />;
  return <FactsPanel />;
}

export function MemoryView({ path }: { path: string }) {
  const current = TABS.find((tab) => tab.path === path) ?? TABS[0];
  return (
    <section class="page">
      <PageHeader title="Memory" />
      <nav class="tabs" aria-label="Memory">
        {TABS.map((tab) => (
          <AppLink key={tab.path} href={tab.path} class="tab" isCurrent={tab.path === current.path}>
            {tab.label}
          </AppLink>
        ))}
      </nav>
      <CurrentPanel path={current.path} />
    </section>
  );
}
