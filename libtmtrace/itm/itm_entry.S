/*
 * itm_entry.S - the register checkpoint of the libitm ABI on x86-64: the
 * top of the ABI's modules, where compiled transactions come in.
 *
 * Owns: _ITM_beginTransaction's entry, which saves the callee-saved
 * registers, the caller's stack pointer after the return and the return
 * address (struct itm_jb, itm.h) on its own stack and hands them to
 * itm_begin() (itm_tx.c). Resuming at such a checkpoint is itm_resume.S's,
 * below itm_tx.c, so that the entry calls down and nothing calls it back.
 * Never: touches memory other than the checkpoint and its stack frame.
 */
        .text

        .globl  _ITM_beginTransaction
        .type   _ITM_beginTransaction, @function
        .p2align 4
_ITM_beginTransaction:
        .cfi_startproc
        leaq    8(%rsp), %rax           /* the caller's %rsp once we return */
        subq    $72, %rsp               /* 64-byte struct itm_jb + alignment */
        .cfi_adjust_cfa_offset 72
        movq    %rbx, 0(%rsp)
        movq    %rbp, 8(%rsp)
        movq    %r12, 16(%rsp)
        movq    %r13, 24(%rsp)
        movq    %r14, 32(%rsp)
        movq    %r15, 40(%rsp)
        movq    %rax, 48(%rsp)
        movq    72(%rsp), %rax          /* return address: the transaction's site */
        movq    %rax, 56(%rsp)
        movq    %rsp, %rsi              /* itm_begin(properties in %edi, &jb) */
        call    itm_begin
        addq    $72, %rsp
        .cfi_adjust_cfa_offset -72
        ret
        .cfi_endproc
        .size   _ITM_beginTransaction, .-_ITM_beginTransaction

        .section .note.GNU-stack,"",@progbits
