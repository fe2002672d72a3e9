// One message, part by part, as useChat holds it. Every part says what it is (`data-part`) and
// where it stands (`data-state`): the example's test reads those, and so can a curious reader.

const show = (value) => (value === undefined ? '' : JSON.stringify(value));

function Tool({ part }) {
  const name = part.type.slice('tool-'.length);
  return (
    <div className="part tool" data-part="tool" data-tool={name} data-state={part.state} title={part.toolCallId}>
      <div className="tool-head">
        <span className="tool-name">{name}</span>
        <span className="tool-state">
          {part.state}
          {part.preliminary ? ' (preliminary output)' : ''}
        </span>
        <span className="tool-where">{name === 'readerLocale' ? 'answered by the page' : 'run by the server'}</span>
      </div>
      <div className="tool-io">
        <span>input</span>
        <pre className="tool-input">{show(part.input)}</pre>
      </div>
      {part.output !== undefined && (
        <div className="tool-io">
          <span>output</span>
          <pre className="tool-output">{show(part.output)}</pre>
        </div>
      )}
      {part.errorText && <p className="error">{part.errorText}</p>}
    </div>
  );
}

function Part({ part }) {
  if (part.type === 'text') {
    return (
      <p className="part text" data-part="text" data-state={part.state}>
        {part.text}
      </p>
    );
  }
  if (part.type === 'reasoning') {
    return (
      <details className="part reasoning" data-part="reasoning" data-state={part.state} open>
        <summary>Reasoning</summary>
        <p>{part.text}</p>
      </details>
    );
  }
  if (part.type === 'step-start') return <hr className="part step" data-part="step" />;
  if (part.type.startsWith('tool-')) return <Tool part={part} />;
  if (part.type === 'data-sources') {
    return (
      <div className="part data" data-part="data" data-type={part.type}>
        <span>sources ({part.data.count})</span>
        <ul>
          {part.data.items.map((item) => (
            <li key={item}>{item}</li>
          ))}
        </ul>
      </div>
    );
  }
  // Anything else (sources, files, other data parts) as it came.
  return (
    <pre className="part other" data-part="other" data-type={part.type}>
      {show(part)}
    </pre>
  );
}

export function Message({ message }) {
  return (
    <article className={`message ${message.role}`} data-role={message.role} data-id={message.id}>
      <div className="role">{message.role === 'user' ? 'you' : 'assistant'}</div>
      {message.parts.map((part, i) => (
        // Parts are only ever appended (a resume replaces the whole message), so the index is a key.
        <Part key={i} part={part} />
      ))}
    </article>
  );
}
