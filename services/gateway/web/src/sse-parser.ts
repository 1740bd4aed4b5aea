// Server-sent events, parsed by hand: EventSource can neither POST nor send the Authorization
// header, so the chat stream is read from fetch's body. Follows the WHATWG event-stream rules
// the UI relies on: `event`, `data` (several lines joined by \n), `id`, comments, and any of
// \n, \r\n or \r ending a line, even when a chunk splits the \r\n pair.

export type ServerSentEvent = { event: string; data: string; id?: string };

export type SseParser = {
  // Feeds decoded text; answers the events it completed, in order.
  push(chunk: string): ServerSentEvent[];
};

export function createSseParser(): SseParser {
  let buffer = '';
  let eventName = '';
  let dataLines: string[] = [];
  let lastId: string | undefined;

  function takeLine(line: string): ServerSentEvent | undefined {
    if (line === '') {
      // A blank line ends the event; one without data is dropped, as EventSource does.
      const event: ServerSentEvent | undefined =
        dataLines.length === 0
          ? undefined
          : {
              event: eventName || 'message',
              data: dataLines.join('\n'),
              ...(lastId === undefined ? {} : { id: lastId }),
            };
      eventName = '';
      dataLines = [];
      return event;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') eventName = value;
    else if (field === 'data') dataLines.push(value);
    else if (field === 'id' && !value.includes('\0')) lastId = value;
    return undefined;
  }

  // A \r ends its line at once; a \n right after it (maybe in the next chunk) is skipped.
  let isAfterCr = false;

  return {
    push(chunk) {
      let text = chunk;
      if (isAfterCr && text.startsWith('\n')) text = text.slice(1);
      isAfterCr = false;
      buffer += text;
      const events: ServerSentEvent[] = [];
      let start = 0;
      for (let index = 0; index < buffer.length; index += 1) {
        const char = buffer[index];
        if (char !== '\n' && char !== '\r') continue;
        const line = buffer.slice(start, index);
        if (char === '\r') {
          if (index === buffer.length - 1) isAfterCr = true;
          else if (buffer[index + 1] === '\n') index += 1;
        }
        start = index + 1;
        const event = takeLine(line);
        if (event) events.push(event);
      }
      buffer = buffer.slice(start);
      return events;
    },
  };
}
