import type { ComponentChildren } from "preact";
import { useEffect, useRef } from "preact/hooks";
import { Icon } from "./common.tsx";

/** A modal dialog (the platform's: focus stays inside, Escape closes), named by its heading. */
export function Dialog(props: { id: string; title: string; onClose: () => void; children: ComponentChildren; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    const opener = document.activeElement as HTMLElement | null;
    return () => opener?.focus?.();
  }, []);
  return (
    <dialog
      ref={ref}
      class={`dialog${props.wide ? " wide" : ""}`}
      aria-labelledby={`${props.id}-title`}
      onCancel={(e) => {
        e.preventDefault();
        props.onClose();
      }}
      onClick={(e) => e.target === ref.current && props.onClose()}
    >
      <header class="dialog-head">
        <h2 id={`${props.id}-title`}>{props.title}</h2>
        <button type="button" class="icon-button" aria-label="Close" onClick={props.onClose}>
          <Icon name="close" />
        </button>
      </header>
      <div class="dialog-body">{props.children}</div>
    </dialog>
  );
}
