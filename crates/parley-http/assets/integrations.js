// The integrations pages' copy buttons: each copies the text of the
// element its data-copy names. Without this script the buttons stay
// hidden and the text is there to select. And the try page's warning
// when it is open at another address than the public one.

const announce = document.getElementById("announce");

function say(text) {
  if (!announce) return;
  announce.textContent = "";
  // A new text node is read out even when the words repeat.
  setTimeout(() => { announce.textContent = text; }, 50);
}

async function copy(button) {
  const source = document.getElementById(button.dataset.copy);
  if (!source) return;
  const text = source.textContent;
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard access (an insecure origin, a denied permission):
    // select the text so the keyboard can copy it.
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    say("Selected: press Ctrl+C or ⌘C to copy.");
    return;
  }
  const label = button.textContent;
  button.textContent = "Copied";
  say("Copied.");
  setTimeout(() => { button.textContent = label; }, 2000);
}

for (const button of document.querySelectorAll("button[data-copy]")) {
  button.hidden = false;
  button.addEventListener("click", () => copy(button));
}

// The try page works only at the service's public address (its widget's
// requests pass the site's domain lock from there): say so elsewhere.
const elsewhere = document.getElementById("elsewhere");
if (elsewhere && elsewhere.dataset.publicOrigin && location.origin !== elsewhere.dataset.publicOrigin) {
  elsewhere.hidden = false;
}
