/*
 * itm_entry.S - the register checkpoint of the libitm ABI on x86-64.
 *
 * Owns: _ITM_beginTransaction's entry, which saves the callee-saved
 * registers, the caller's stack pointer after the return and the return
 * address (struct itm_jb, itm.h) on its own stack and hands them to
 * itm_begin(); and itm_longjmp(), which resumes at such a checkpoint as if
 * _ITM_beginTransaction returned `code` there (restart, cancel).
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

        /* void itm_longjmp(const struct itm_jb *jb, uint32_t code) */
        .globl  itm_longjmp
        .hidden itm_longjmp
        .type   itm_longjmp, @function
        .p2align 4
itm_longjmp:
        .cfi_startproc
        movl    %esi, %eax
        movq    0(%rdi), %rbx
        movq    8(%rdi), %rbp
        movq    16(%rdi), %r12
        movq    24(%rdi), %r13
        movq    32(%rdi), %r14
        movq    40(%rdi), %r15
        movq    48(%rdi), %rsp
        jmp     *56(%rdi)
        .cfi_endproc
        .size   itm_longjmp, .-itm_longjmp

        .section .note.GNU-stack,"",@progbits
