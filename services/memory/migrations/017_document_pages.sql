-- PDF and DOCX documents (their text extracted by the tools service), and the pages a PDF's
-- chunks begin on, so a search result and the agent's answer can cite "page 12". Both page
-- columns stay NULL for documents without pages, including every document stored before this.

ALTER TABLE memory.documents DROP CONSTRAINT documents_content_type_check;
ALTER TABLE memory.documents ADD CONSTRAINT documents_content_type_check CHECK (content_type IN (
  'text/plain', 'text/markdown', 'text/html', 'application/pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document'));

ALTER TABLE memory.documents ADD COLUMN page_count integer CHECK (page_count >= 1);
-- Numbered from 1, as a reader cites pages.
ALTER TABLE memory.document_chunks ADD COLUMN page integer CHECK (page >= 1);
