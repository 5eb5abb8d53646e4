;;; eglot-test.el --- stepwise driven by eglot, as an Emacs user without stepwise code has it  -*- lexical-binding: t -*-

;; Run by test.sh: emacs --batch -q -l eglot-test.el. Environment: STEPWISE_TEST_RECIPE (the elisp of
;; docs/editors.md's eglot recipe, loaded as a user's init would), STEPWISE_TEST_DIR (the workspace, with
;; greet.txt), STEPWISE_TEST_RECORD (the mock model's record of requests); `stepwise' is on PATH, and the
;; model endpoint (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, MODEL_ID) and STEPWISE_STATE_DIR are in the
;; environment eglot starts the server with.
;;
;; eglot answers workspace/applyEdit and window/showMessageRequest itself; what this file adds is what a
;; person at the keyboard would do (answer the approval prompt, let Emacs go idle so eglot sends didChange)
;; and what a test needs (recording what arrived). Every wait is on an event, with a deadline.

(require 'cl-lib)
(require 'eglot)

(defvar st-dir (file-name-as-directory (getenv "STEPWISE_TEST_DIR")))
(defvar st-record (getenv "STEPWISE_TEST_RECORD"))
(defvar st-notes nil "Notifications from the server, newest first: (METHOD . PARAMS).")
(defvar st-asked nil "The approval prompts eglot showed, newest first.")
(defvar st-passed 0)
(defvar st-failed 0)

(defun st-check (name ok &optional detail)
  (if ok
      (progn (cl-incf st-passed) (princ (format "ok   %s\n" name)))
    (cl-incf st-failed)
    (princ (format "FAIL %s%s\n" name (if detail (format ": %s" detail) "")))))

;; eglot 1.9 (Debian 12) neither declares nor handles work-done progress; 1.10 and later (Emacs 29+)
;; do. On 1.9 the test declares the capability as later eglot does, so the server's $/progress is
;; exercised on every version; it is recorded below either way.
(defvar st-eglot-declares-progress
  (with-temp-buffer
    (insert-file-contents (locate-library "eglot.el"))
    (and (search-forward ":workDoneProgress" nil t) t)))
(unless st-eglot-declares-progress
  (cl-defmethod eglot-client-capabilities :around (_server)
    (let ((caps (cl-call-next-method)))
      (plist-put caps :window (plist-put (plist-get caps :window) :workDoneProgress t)))))

(cl-defmethod eglot-handle-notification :before (_server method &rest params)
  (push (cons (format "%s" method) params) st-notes))

(defun st-notes-of (method)
  (reverse (cl-loop for (m . p) in st-notes when (equal m method) collect p)))

;; docs/editors.md's recipe, as a user's init file has it.
(load (getenv "STEPWISE_TEST_RECIPE") nil t)
(setq eglot-sync-connect t)

(defvar st-messages nil "What was shown in the echo area, newest first.")
(advice-add 'message :around
            (lambda (orig fmt &rest args)
              (let ((text (apply orig fmt args)))
                (when (stringp text) (push text st-messages))
                text)))

(defvar st-buffer nil)

(defun st-idle ()
  "What Emacs does when the user stops typing: eglot's idle timer sends the pending didChange.
Idle timers never run in batch mode, so the test calls eglot's own function for them."
  (when (buffer-live-p st-buffer)
    (with-current-buffer st-buffer
      (when (and eglot--managed-mode eglot--recent-changes)
        (eglot--signal-textDocument/didChange)))))

(defun st-wait (desc pred &optional secs)
  "Process server output until PRED holds or SECS (default 60) pass; records a failure naming DESC."
  (let ((end (+ (float-time) (or secs 60))))
    (while (and (not (funcall pred)) (< (float-time) end))
      (accept-process-output nil 0.05)
      (st-idle))
    (or (funcall pred)
        (progn (princ (format "timed out waiting for %s\n" desc)) nil))))

(defun st-answer-approval (prompt collection &rest _)
  "The user reads the approval prompt eglot shows and picks Allow."
  (push prompt st-asked)
  (or (car (member "Allow" (append collection nil)))
      (error "no Allow among %S" collection)))

(defun st-tool-results ()
  "The tool results the model received, from the mock model's record of requests."
  (with-temp-buffer
    (when (file-exists-p st-record) (insert-file-contents st-record))
    (cl-loop for line in (split-string (buffer-string) "\n" t)
             for body = (gethash "body" (json-parse-string line))
             append (cl-loop for msg across (or (and (hash-table-p body) (gethash "messages" body)) [])
                             for content = (gethash "content" msg)
                             when (vectorp content)
                             append (cl-loop for block across content
                                             when (equal (gethash "type" block) "tool_result")
                                             collect (let ((c (gethash "content" block)))
                                                       (if (stringp c) c (format "%S" c))))))))

;; Review through the lenses: what the user does is go to the line and run docs/editors.md's command.
(defun st-pending-is (want)
  "Whether the newest stepwise/review lists WANT as its pending files."
  (let ((last (car (last (st-notes-of "stepwise/review")))))
    (and last (equal (append (plist-get last :pending) nil) want))))

(defun st-lens-titles (line)
  "The titles of the server's code lenses of greet.txt on LINE (0-based)."
  (with-current-buffer st-buffer
    (eglot--signal-textDocument/didChange)
    (delq nil (mapcar (lambda (l) (and (= line (plist-get (plist-get (plist-get l :range) :start) :line))
                                       (plist-get (plist-get l :command) :title)))
                      (jsonrpc-request (eglot-current-server) :textDocument/codeLens
                                       `(:textDocument ,(eglot--TextDocumentIdentifier)))))))

(defun st-lens-on-line (line title)
  "Go to LINE (1-based) of greet.txt and run `stepwise-lens-at-point', picking TITLE when asked."
  (with-current-buffer st-buffer
    (goto-char (point-min))
    (forward-line (1- line))
    (cl-letf (((symbol-function 'completing-read) (lambda (_prompt collection &rest _)
                                                    (or (car (member title (append collection nil)))
                                                        (error "no %s among %S" title collection)))))
      (stepwise-lens-at-point))))

(defun st-main ()
  (setq st-buffer (find-file-noselect (expand-file-name "greet.txt" st-dir)))
  (with-current-buffer st-buffer
    (text-mode)
    (let ((contact (eglot--guess-contact)))
      (st-check "the recipe makes `stepwise lsp' the server of text-mode buffers"
                (equal (nth 3 contact) '("stepwise" "lsp")) (nth 3 contact))
      (st-check "the recipe turns off eglot's confirmation of server edits"
                (null eglot-confirm-server-initiated-edits))
      (apply #'eglot contact)))
  (let* ((server (with-current-buffer st-buffer (eglot-current-server)))
         (proc (and server (jsonrpc--process server))))
    (st-check "eglot connects to stepwise lsp and manages the buffer"
              (and server (with-current-buffer st-buffer eglot--managed-mode)))
    (unless server (error "no server"))
    (cl-letf (((symbol-function 'completing-read) #'st-answer-approval))
      ;; docs/editors.md's `stepwise-run', as `M-x stepwise-run' calls it in the buffer: an asynchronous
      ;; workspace/executeCommand. (A synchronous one, `eglot-execute-command', leaves what the server sends
      ;; right after its answer unread in Emacs 28's jsonrpc until more output arrives: the progress the
      ;; server asks to create would wait 10 s.)
      (with-current-buffer st-buffer (stepwise-run "Make the greeting friendlier"))
      (st-wait "the answer to stepwise.run"
               (lambda () (cl-some (lambda (m) (string-match-p "^stepwise: run run-[^ ]+ started$" m)) st-messages)) 10)
      (st-check "stepwise-run starts a run (stepwise.run answers with its runId)"
                (cl-some (lambda (m) (string-match-p "^stepwise: run run-[^ ]+ started$" m)) st-messages)
                (seq-take st-messages 5))
      ;; The run: a plan, an edit of the open buffer, a shell command (approved), a reminder, the end.
      (st-wait "the edit in the buffer"
               (lambda () (with-current-buffer st-buffer
                            (string-match-p "welcome to stepwise" (buffer-string)))))
      (st-check "the agent's edit lands in the open buffer (workspace/applyEdit)"
                (with-current-buffer st-buffer (string-match-p "Hello, welcome to stepwise" (buffer-string)))
                (with-current-buffer st-buffer (buffer-string)))
      (st-wait "the end of the run's progress"
               (lambda () (cl-some (lambda (p) (equal (plist-get (plist-get p :value) :kind) "end"))
                                   (st-notes-of "$/progress")))
               90))
    (st-check "the approval request was shown (window/showMessageRequest) and answered"
              (and st-asked (string-match-p "grep -c welcome greet.txt" (car st-asked))) st-asked)
    (st-check "the shell command saw the edit on disk"
              (member "1" (mapcar #'string-trim (st-tool-results))) (st-tool-results))
    (let ((kinds (mapcar (lambda (p) (plist-get (plist-get p :value) :kind)) (st-notes-of "$/progress")))
          (pcts (delq nil (mapcar (lambda (p) (plist-get (plist-get p :value) :percentage))
                                  (st-notes-of "$/progress")))))
      (st-check "$/progress: begin, reports, end" (and (equal (car kinds) "begin") (member "report" kinds)
                                                       (equal (car (last kinds)) "end"))
                kinds)
      (st-check "$/progress reaches 100%" (member 100 pcts) pcts))
    (let ((logs (mapcar (lambda (p) (plist-get p :message)) (st-notes-of "window/logMessage")))
          (name (file-name-nondirectory (directory-file-name (file-truename st-dir)))))
      (st-check "the plan arrives as log lines"
                (and (member (format "stepwise plan (%s) 0/1: [>] Make the greeting friendlier" name) logs)
                     (member (format "stepwise plan (%s) 1/1: [x] Make the greeting friendlier" name) logs))
                logs)
      (st-check "the reminder arrives as a log line"
                (member (format "stepwise reminder (%s): <reminder>Update your todos.</reminder>" name) logs)
                logs)
      (st-check "each log line is one line" (cl-notany (lambda (l) (string-match-p "\n" l)) logs)))
    (st-check "the buffer stays unsaved (the edit is the editor's, in its undo history)"
              (and (buffer-modified-p st-buffer)
                   (consp (buffer-local-value (quote buffer-undo-list) st-buffer))))
    ;; docs/editors.md's `stepwise-set-plan' on a region in the plan's text form, then `stepwise-steer' with no
    ;; run going on: it starts one, whose request carries the user's plan edit and the steer's text.
    ;; (A scratch buffer of the project, in a mode the server manages, as the user's would be.)
    (with-temp-buffer
      (setq default-directory st-dir)
      (text-mode)
      (insert "[x] #1: Make the greeting friendlier\n[ ] Say goodbye\n")
      (stepwise-set-plan (point-min) (point-max)))
    (st-wait "the answer to stepwise.editPlan"
             (lambda () (cl-some (lambda (m) (string-match-p "^stepwise: plan \\(revision\\|not changed\\)" m)) st-messages)) 10)
    (st-check "stepwise-set-plan replaces the plan (stepwise.editPlan answers with its revision)"
              (cl-some (lambda (m) (string-match-p "^stepwise: plan revision [0-9]+$" m)) st-messages)
              (seq-take st-messages 5))
    (with-temp-buffer
      (setq default-directory st-dir)
      (text-mode)
      (insert "[>] #1: one\n[>] two\n")
      (stepwise-set-plan (point-min) (point-max)))
    (st-wait "the refusal of a broken plan"
             (lambda () (cl-some (lambda (m) (string-match-p "^stepwise: plan not changed" m)) st-messages)) 10)
    (st-check "a broken plan is refused with the rule's text"
              (cl-some (lambda (m) (string-match-p "^stepwise: plan not changed: Error: Only one task can be in_progress at a time" m))
                       st-messages)
              (seq-take st-messages 5))
    (let ((runs (length (st-notes-of "$/progress"))))
      (with-current-buffer st-buffer (stepwise-steer "Now say goodbye"))
      (st-wait "the steered run's end"
               (lambda () (cl-some (lambda (p) (equal (plist-get (plist-get p :value) :kind) "end"))
                                   (nthcdr runs (st-notes-of "$/progress"))))
               60))
    (let ((last (with-temp-buffer
                  (insert-file-contents st-record)
                  (car (last (split-string (buffer-string) "\n" t))))))
      (st-check "the steer starts a run with its text, and the model is told of the plan edit"
                (and last (string-match-p "Now say goodbye" last)
                     (string-match-p "<plan-edit>The user changed the plan. It is now:" last)
                     (string-match-p "Say goodbye" last))
                (and last (substring last (max 0 (- (length last) 800))))))
;; Review through the server's code lenses with docs/editors.md's `stepwise-lens-at-point': the first
    ;; hunk (line 1) kept, the other (line 3) undone in the buffer.
    (st-wait "both runs to be over (an undo waits for no run)"
             (lambda () (>= (cl-count-if (lambda (p) (equal (plist-get p :state) "idle")) (st-notes-of "stepwise/status")) 2))
             10)
    (st-check "the review is announced: two hunks of greet.txt (stepwise/review)"
              (st-wait "stepwise/review" (lambda () (st-pending-is '((:path "greet.txt" :hunks 2)))) 10)
              (st-notes-of "stepwise/review"))
    (st-lens-on-line 1 "Keep")
    (st-check "Keep through the lens marks that hunk reviewed"
              (st-wait "one hunk left" (lambda () (st-pending-is '((:path "greet.txt" :hunks 1)))) 10)
              (st-notes-of "stepwise/review"))
    (st-check "the kept hunk has no lenses left, the other has Keep and Undo; the plan lens counts it"
              (let ((first (st-lens-titles 0)))
                (and (= (length first) 1) (string-suffix-p "· 1 hunk to review" (car first))
                     (equal (st-lens-titles 2) '("Keep" "Undo"))))
              (list (st-lens-titles 0) (st-lens-titles 2)))
    ;; The server wrote the agent's text to disk for the shell command (eglot cannot save for it), so
    ;; Emacs asks whether to discard the buffer's edits when the undo's edit arrives: the user keeps them.
    (cl-letf (((symbol-function 'yes-or-no-p) (lambda (q) (push q st-asked) nil)))
      (st-lens-on-line 3 "Undo")
      (st-check "Undo through the lens puts the hunk's old line back in the buffer, the kept one stays"
                (st-wait "the undone line" (lambda () (with-current-buffer st-buffer
                                                        (equal (buffer-string) "Hello, welcome to stepwise from greet.txt\n\nBye from greet.txt\n")))
                         10)
                (with-current-buffer st-buffer (buffer-string))))
    (st-check "nothing is left to review, and the lenses are gone"
              (and (st-wait "an empty review" (lambda () (st-pending-is nil)) 10)
                   (null (seq-filter (lambda (tl) (member tl '("Keep" "Undo")))
                                     (append (st-lens-titles 0) (st-lens-titles 2)))))
              (list (st-notes-of "stepwise/review") (st-lens-titles 0) (st-lens-titles 2)))
    (let ((events (getenv "STEPWISE_TEST_EVENTS")))
      (when events
        (with-current-buffer (jsonrpc-events-buffer server)
          (write-region (point-min) (point-max) events nil 'quiet))))
    ;; Shutdown: eglot sends `shutdown' (an error if unanswered within 10 s), then `exit', then has
    ;; jsonrpc delete the process at once. The server must end by itself on `exit': before jsonrpc
    ;; deletes it, the test waits for that (as long as 10 s).
    (advice-add 'jsonrpc-shutdown :before
                (lambda (&rest _)
                  (st-wait "the server to exit by itself after `exit'" (lambda () (not (process-live-p proc))) 10)))
    (eglot-shutdown server nil 10 t)
    (st-check "shutdown is clean: answered, and the server exits by itself with status 0"
              (and (eq (process-status proc) 'exit) (= (process-exit-status proc) 0))
              (list (process-status proc) (process-exit-status proc)))))

(condition-case err
    (st-main)
  (error (st-check "the test ran to its end" nil (error-message-string err))))
(princ (format "%d passed, %d failed\n" st-passed st-failed))
(kill-emacs (if (and (> st-passed 0) (= st-failed 0)) 0 1))
