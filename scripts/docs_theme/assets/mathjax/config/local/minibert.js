// Loaded after MathJax's own config (mkdocs.yml, custom_mathjax_url). The jupyter-server-mathjax package carries
// the STIX-Web fonts only, so MathJax must not look for its TeX fonts (it would ask for files that are not there);
// and the blank font it measures against is a local() one, which never loads, as its url('about:blank') never
// did, but without the failed request that the browser reports as an error.
MathJax.Hub.Config({"HTML-CSS": {
  availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null,
  styles: {"@font-face": {"font-family": "MathJax_Blank", src: "local('MathJax_Blank')"}}}});
MathJax.Ajax.loadComplete("[MathJax]/config/local/minibert.js");
