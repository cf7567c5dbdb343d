import { Dialog } from "./Dialog.tsx";

export const SHORTCUTS: [string, string][] = [
  ["n", "Add a link"],
  ["/", "Search"],
  ["j / k", "Next / previous bookmark"],
  ["Enter", "Open details"],
  ["x", "Select or unselect"],
  ["f", "Favorite or unfavorite"],
  ["e", "Archive or unarchive"],
  ["r", "Read the saved copy"],
  ["h", "Highlight the selected text (in the Reader)"],
  ["Esc", "Close the panel or clear the search"],
  ["?", "Show these shortcuts"],
];

export function Help(props: { onClose: () => void }) {
  return (
    <Dialog id="help" title="Keyboard shortcuts" onClose={props.onClose}>
      <table class="shortcuts">
        <tbody>
          {SHORTCUTS.map(([key, what]) => (
            <tr key={key}>
              <th scope="row">
                <kbd>{key}</kbd>
              </th>
              <td>{what}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="hint">You can turn the single-key shortcuts off in Settings.</p>
    </Dialog>
  );
}
