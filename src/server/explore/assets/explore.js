// Placeholder: the real explorer is generated from ui/ with npm into this file.
document.getElementById('app').textContent = 'The explorer UI is not built into this binary yet.';
